// node/events.js: the first of the Node.js layer's files (see engine.rs,
// NODE_PARTS). Each is a function of `(native, lib)`, evaluated once when the
// engine is created (before any cell), that captures what it uses and adds
// what it defines to `lib`; built-in modules go into `lib.builtins` as
// functions that make them on first use.
//
// This one: helpers shared by the others (`defineGlobal`, `nodeError`,
// `invalidArgType`), `EventEmitter` (`events`), and `lib.Readable`, the
// small readable stream behind `process.stdin` and `fs.createReadStream`.
(function (native, lib) {
    "use strict";

    const defineProperty = Object.defineProperty;
    const create = Object.create;
    const objectKeys = Object.keys;
    const reflectApply = Reflect.apply;
    const ErrorCtor = Error;
    const TypeErrorCtor = TypeError;
    const PromiseCtor = Promise;
    const promiseThen = Promise.prototype.then;
    const resolvedPromise = Promise.resolve();
    const arrayPush = Array.prototype.push;
    const arraySlice = Array.prototype.slice;
    const arraySplice = Array.prototype.splice;
    const arrayUnshift = Array.prototype.unshift;
    const symbolAsyncIterator = Symbol.asyncIterator;
    const { call, hidePreludeFrames, safeString } = lib;

    lib.builtins = create(null);

    lib.defineGlobal = function (name, value) {
        defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
    };

    // An error as Node makes them: with a `code`, and without the
    // prelude's frames.
    lib.nodeError = function (Ctor, code, message) {
        const e = new Ctor(message);
        e.code = code;
        return hidePreludeFrames(e);
    };

    function received(v) {
        if (v === null) return "null";
        if (v === undefined) return "undefined";
        if (typeof v === "function") return "function " + (typeof v.name === "string" && v.name !== "" ? v.name : "(anonymous)");
        if (typeof v === "object") return "an instance of " + ((v.constructor && v.constructor.name) || "Object");
        if (typeof v === "string") return "type string ('" + (v.length > 28 ? call(String.prototype.slice, v, 0, 25) + "..." : v) + "')";
        return "type " + typeof v + " (" + safeString(v) + ")";
    }

    lib.invalidArgType = function (name, expected, value) {
        return lib.nodeError(TypeErrorCtor, "ERR_INVALID_ARG_TYPE", "The \"" + name + "\" argument must be " + expected + ". Received " + received(value));
    };

    // Runs `f` on a later turn of the job queue (Node's process.nextTick
    // and the callbacks of fs's callback API).
    lib.later = function (f) {
        call(promiseThen, resolvedPromise, f);
    };

    // ---- EventEmitter --------------------------------------------------------

    // The emitter's listeners by event name (made when `make`).
    function listenersOf(emitter, make) {
        let events = emitter._events;
        if (events === undefined || events === null) {
            if (!make) return undefined;
            events = create(null);
            defineProperty(emitter, "_events", { value: events, writable: true, configurable: true, enumerable: false });
        }
        return events;
    }

    function checkListener(listener) {
        if (typeof listener !== "function") throw lib.invalidArgType("listener", "of type function", listener);
    }

    function addListener(emitter, name, listener, prepend) {
        checkListener(listener);
        const events = listenersOf(emitter, true);
        if (events.newListener !== undefined) emitter.emit("newListener", name, listener.listener ? listener.listener : listener);
        const list = events[name] || (events[name] = []);
        if (prepend) call(arrayUnshift, list, listener);
        else call(arrayPush, list, listener);
        return emitter;
    }

    function onceWrapper(emitter, name, listener) {
        const wrapped = function (...args) {
            emitter.removeListener(name, wrapped);
            return reflectApply(listener, this, args);
        };
        wrapped.listener = listener;
        return wrapped;
    }

    class EventEmitter {
        constructor() {
            listenersOf(this, true);
        }
        on(name, listener) { return addListener(this, name, listener, false); }
        addListener(name, listener) { return addListener(this, name, listener, false); }
        prependListener(name, listener) { return addListener(this, name, listener, true); }
        once(name, listener) {
            checkListener(listener);
            return addListener(this, name, onceWrapper(this, name, listener), false);
        }
        prependOnceListener(name, listener) {
            checkListener(listener);
            return addListener(this, name, onceWrapper(this, name, listener), true);
        }
        off(name, listener) { return this.removeListener(name, listener); }
        removeListener(name, listener) {
            checkListener(listener);
            const events = listenersOf(this, false);
            const list = events && events[name];
            if (list === undefined) return this;
            for (let i = list.length - 1; i >= 0; i--) {
                if (list[i] === listener || list[i].listener === listener) {
                    call(arraySplice, list, i, 1);
                    if (list.length === 0) delete events[name];
                    if (events.removeListener !== undefined) this.emit("removeListener", name, listener);
                    break;
                }
            }
            return this;
        }
        removeAllListeners(name) {
            const events = listenersOf(this, false);
            if (events === undefined) return this;
            if (name === undefined) {
                const names = objectKeys(events);
                for (let i = 0; i < names.length; i++) delete events[names[i]];
            } else {
                delete events[name];
            }
            return this;
        }
        emit(name, ...args) {
            const events = listenersOf(this, false);
            const list = events && events[name];
            if (list === undefined || list.length === 0) {
                if (name === "error") {
                    const err = args[0];
                    if (err instanceof ErrorCtor) throw err;
                    throw lib.nodeError(ErrorCtor, "ERR_UNHANDLED_ERROR", "Unhandled error. (" + safeString(err) + ")");
                }
                return false;
            }
            const snapshot = call(arraySlice, list);
            for (let i = 0; i < snapshot.length; i++) reflectApply(snapshot[i], this, args);
            return true;
        }
        listeners(name) {
            const events = listenersOf(this, false);
            const list = (events && events[name]) || [];
            const out = [];
            for (let i = 0; i < list.length; i++) call(arrayPush, out, list[i].listener || list[i]);
            return out;
        }
        rawListeners(name) {
            const events = listenersOf(this, false);
            return call(arraySlice, (events && events[name]) || []);
        }
        listenerCount(name) {
            const events = listenersOf(this, false);
            const list = events && events[name];
            return list === undefined ? 0 : list.length;
        }
        eventNames() {
            const events = listenersOf(this, false);
            return events === undefined ? [] : objectKeys(events);
        }
        setMaxListeners(_n) { return this; }
        getMaxListeners() { return EventEmitter.defaultMaxListeners; }
    }
    EventEmitter.defaultMaxListeners = 10;
    EventEmitter.EventEmitter = EventEmitter;
    EventEmitter.errorMonitor = Symbol("events.errorMonitor");
    // events.once(emitter, name): the arguments of the next `name` event.
    EventEmitter.once = function (emitter, name) {
        return new PromiseCtor((resolve, reject) => {
            const onError = (err) => {
                emitter.removeListener(name, onEvent);
                reject(err);
            };
            const onEvent = (...args) => {
                if (name !== "error") emitter.removeListener("error", onError);
                resolve(args);
            };
            emitter.once(name, onEvent);
            if (name !== "error") emitter.once("error", onError);
        });
    };
    lib.EventEmitter = EventEmitter;
    lib.builtins.events = () => EventEmitter;

    // ---- Readable: a whole source, delivered as one chunk ---------------------
    //
    // Enough of a readable stream for reading standard input or a file:
    // 'data' (one chunk), 'end' and 'close' events once a listener asks for
    // data, `for await`, `setEncoding`, `read()`, `pipe()`. `source()` gives
    // the bytes (a Buffer) and is called once, when data is first wanted.
    class Readable extends EventEmitter {
        #source;
        #encoding = null;
        #taken = false;
        #scheduled = false;
        constructor(source, fd) {
            super();
            this.#source = source;
            this.readable = true;
            if (fd !== undefined) this.fd = fd;
        }
        #take() {
            if (this.#taken) return null;
            this.#taken = true;
            this.readable = false;
            const bytes = this.#source();
            if (bytes.length === 0) return null;
            return this.#encoding === null ? bytes : bytes.toString(this.#encoding);
        }
        #flow() {
            if (this.#scheduled) return;
            this.#scheduled = true;
            lib.later(() => {
                let chunk;
                try {
                    chunk = this.#take();
                } catch (e) {
                    this.emit("error", e);
                    return;
                }
                if (chunk !== null) this.emit("data", chunk);
                this.emit("end");
                this.emit("close");
            });
        }
        on(name, listener) {
            super.on(name, listener);
            if (name === "data" || name === "end" || name === "readable") this.#flow();
            return this;
        }
        once(name, listener) {
            super.once(name, listener);
            if (name === "data" || name === "end" || name === "readable") this.#flow();
            return this;
        }
        addListener(name, listener) { return this.on(name, listener); }
        setEncoding(encoding) {
            this.#encoding = encoding === undefined ? "utf8" : encoding;
            return this;
        }
        read() { return this.#take(); }
        resume() { this.#flow(); return this; }
        pause() { return this; }
        isPaused() { return false; }
        unref() { return this; }
        ref() { return this; }
        destroy() { this.#taken = true; this.readable = false; return this; }
        pipe(destination) {
            lib.later(() => {
                const chunk = this.#take();
                if (chunk !== null) destination.write(chunk);
                if (destination !== lib.stdout && destination !== lib.stderr && typeof destination.end === "function") destination.end();
            });
            return destination;
        }
        // All of the source at once (readline uses it), as text.
        takeText() {
            const chunk = this.#take();
            if (chunk === null) return "";
            return typeof chunk === "string" ? chunk : chunk.toString("utf8");
        }
        [symbolAsyncIterator]() {
            let done = false;
            return {
                next: async () => {
                    if (done) return { value: undefined, done: true };
                    done = true;
                    const chunk = this.#take();
                    return chunk === null ? { value: undefined, done: true } : { value: chunk, done: false };
                },
                return: async () => {
                    done = true;
                    return { value: undefined, done: true };
                },
                [symbolAsyncIterator]() { return this; },
            };
        }
    }
    lib.Readable = Readable;
})
