// node/timers.js: setTimeout, setInterval, setImmediate and their clear
// functions, as globals and as `timers` / `timers/promises`. The callbacks
// live here; the schedule lives in Rust (event_loop.rs), which fires a
// timer through `lib.fireTimer(id)` once nothing else is left to run.
// Times are real: a program waiting 100 ms takes 100 ms of wall time (the
// host's limit applies).
(function (native, lib) {
    "use strict";

    const { call } = lib;
    const MapCtor = Map;
    const mapGet = Map.prototype.get;
    const mapSet = Map.prototype.set;
    const mapDelete = Map.prototype.delete;
    const PromiseCtor = Promise;
    const toPrimitive = Symbol.toPrimitive;
    const numberCtor = Number;
    const MAX_DELAY = 2147483647;

    // Timers armed and not yet fired or cleared, by id.
    const active = new MapCtor();
    let lastId = 0;

    function delayOf(ms) {
        ms = numberCtor(ms);
        // Node's rule: anything but 1..2^31-1 ms is 1 ms.
        return ms >= 1 && ms <= MAX_DELAY ? ms : 1;
    }

    class Timeout {
        #id;
        #ms;
        #callback;
        #args;
        #repeat;
        #ref = true;
        constructor(callback, ms, args, repeat) {
            this.#id = ++lastId;
            this.#ms = ms;
            this.#callback = callback;
            this.#args = args;
            this.#repeat = repeat;
            call(mapSet, active, this.#id, this);
            native.timerArm(this.#id, ms, true);
        }
        static fire(t) {
            if (t.#repeat) native.timerArm(t.#id, t.#ms, t.#ref);
            else call(mapDelete, active, t.#id);
            // A method call: `this` is the Timeout, as in Node, and no
            // native frame sits between the callback and the event loop.
            t.#callback(...t.#args);
        }
        static clear(t) {
            call(mapDelete, active, t.#id);
            native.timerCancel(t.#id);
        }
        ref() {
            this.#ref = true;
            native.timerRef(this.#id, true);
            return this;
        }
        unref() {
            this.#ref = false;
            native.timerRef(this.#id, false);
            return this;
        }
        hasRef() { return this.#ref; }
        refresh() {
            if (call(mapGet, active, this.#id) === this) native.timerArm(this.#id, this.#ms, this.#ref);
            return this;
        }
        close() {
            Timeout.clear(this);
            return this;
        }
        [toPrimitive]() { return this.#id; }
    }
    const fire = Timeout.fire;
    const clear = Timeout.clear;
    delete Timeout.fire;
    delete Timeout.clear;

    class Immediate extends Timeout {}

    function checkCallback(callback) {
        if (typeof callback !== "function") throw lib.invalidArgType("callback", "of type function", callback);
    }

    function setTimeout(callback, ms = 0, ...args) {
        checkCallback(callback);
        return new Timeout(callback, delayOf(ms), args, false);
    }

    function setInterval(callback, ms = 0, ...args) {
        checkCallback(callback);
        return new Timeout(callback, delayOf(ms), args, true);
    }

    function setImmediate(callback, ...args) {
        checkCallback(callback);
        return new Immediate(callback, 0, args, false);
    }

    // Takes a Timeout or its id (as a number or string).
    function clearTimer(t) {
        if (t instanceof Timeout) {
            clear(t);
            return;
        }
        if (typeof t === "number" || typeof t === "string") {
            const found = call(mapGet, active, numberCtor(t));
            if (found !== undefined) clear(found);
        }
    }

    lib.fireTimer = function (id) {
        const t = call(mapGet, active, id);
        if (t !== undefined) fire(t);
    };

    const timers = {
        setTimeout, setInterval, setImmediate,
        clearTimeout: clearTimer, clearInterval: clearTimer, clearImmediate: clearTimer,
    };
    for (const name of ["setTimeout", "setInterval", "setImmediate", "clearTimeout", "clearInterval", "clearImmediate"]) {
        lib.defineGlobal(name, timers[name]);
    }
    lib.builtins.timers = () => timers;
    lib.builtins["timers/promises"] = () => ({
        setTimeout: (ms = 0, value = undefined) => new PromiseCtor((resolve) => setTimeout(resolve, ms, value)),
        setImmediate: (value = undefined) => new PromiseCtor((resolve) => setImmediate(resolve, value)),
        scheduler: { wait: (ms) => new PromiseCtor((resolve) => setTimeout(resolve, ms)), yield: () => new PromiseCtor((resolve) => setImmediate(resolve)) },
    });
})
