// node/fs.js: `fs` (the global, and the `fs` module) and `fs/promises`:
// Node's synchronous calls over the workspace, their promise and callback
// forms, Stats and Dirent, and whole-file streams. Paths may be strings,
// file: URLs or Buffers; relative ones resolve against `process.cwd()`.
// Errors carry Node's `code` (ENOENT, ...), `syscall` and `path`.
// `readFileSync(0)` and `readFileSync("/dev/stdin")` read standard input.
(function (native, lib) {
    "use strict";

    const { call, wellFormed, hidePreludeFrames } = lib;
    const ErrorCtor = Error;
    const DateCtor = Date;
    const StringCtor = String;
    const Uint8ArrayCtor = Uint8Array;
    const ArrayBufferCtor = ArrayBuffer;
    const isView = ArrayBuffer.isView;
    const mathCeil = Math.ceil;
    const mathRandom = () => Math.random();
    const arrayPush = Array.prototype.push;
    const reflectApply = Reflect.apply;
    const { Buffer, path } = lib;

    const ERRNO = { ENOENT: -2, EIO: -5, EBADF: -9, EACCES: -13, EEXIST: -17, EXDEV: -18, ENOTDIR: -20, EISDIR: -21, EINVAL: -22, EFBIG: -27, ENOSPC: -28, ENOSYS: -38, ENOTEMPTY: -39, EPERM: -1 };

    function fail(code, syscall, shown, dest = undefined) {
        const e = new ErrorCtor(code + ": " + syscall + " '" + shown + "'" + (dest === undefined ? "" : " -> '" + dest + "'"));
        e.errno = ERRNO[code];
        e.code = code;
        e.syscall = syscall;
        e.path = shown;
        if (dest !== undefined) e.dest = dest;
        return hidePreludeFrames(e);
    }

    function result(raw, syscall, shown, dest = undefined) {
        if (raw.error !== undefined) throw fail(raw.error, syscall, shown, dest);
        return raw.value;
    }

    // [the absolute path, the path as the caller gave it (for messages)].
    function target(value, name = "path") {
        const given = wellFormed(lib.pathArg(value, name));
        return [path.resolve(given), given];
    }

    function isStdin(value) {
        return value === 0 || value === "/dev/stdin";
    }

    function encodingOf(options) {
        const enc = typeof options === "string" ? options : options !== null && typeof options === "object" ? options.encoding : undefined;
        return enc === undefined || enc === null || enc === "buffer" ? null : lib.normalizeEncoding(enc);
    }

    function flagOf(options) {
        return options !== null && typeof options === "object" && typeof options.flag === "string" ? options.flag : "w";
    }

    // The bytes (or text) `data` stands for.
    function dataOf(data, options) {
        if (typeof data === "string") {
            const enc = encodingOf(options);
            return enc === null || enc === "utf8" ? wellFormed(data) : lib.encode(data, enc);
        }
        if (data instanceof Uint8ArrayCtor) return data;
        if (data instanceof ArrayBufferCtor) return new Uint8ArrayCtor(data);
        if (isView(data)) return new Uint8ArrayCtor(data.buffer, data.byteOffset, data.byteLength);
        return wellFormed(lib.safeString(data));
    }

    // The file's text, whatever its bytes (invalid UTF-8 replaced).
    function readText(abs, shown) {
        const raw = native.fsRead(abs, true);
        if (raw.error === "EINVAL") return lib.decodeUtf8(result(native.fsRead(abs, false), "open", shown));
        return result(raw, "open", shown);
    }
    lib.readText = readText;

    function readFileSync(file, options = undefined) {
        const enc = encodingOf(options);
        if (isStdin(file)) {
            if (enc === "utf8") {
                const raw = native.readStdin(true);
                if (raw.error === undefined) return raw.value;
            }
            const bytes = lib.toBuffer(lib.readStdin());
            return enc === null ? bytes : bytes.toString(enc);
        }
        const [abs, shown] = target(file);
        if (enc === "utf8") return readText(abs, shown);
        const bytes = lib.toBuffer(result(native.fsRead(abs, false), "open", shown));
        return enc === null ? bytes : bytes.toString(enc);
    }

    function writeFileSync(file, data, options = undefined) {
        if (file === 1 || file === 2) {
            native.writeRaw(file, dataOf(data, options));
            return;
        }
        const [abs, shown] = target(file);
        result(native.fsWrite(abs, dataOf(data, options), flagOf(options)[0] === "a"), "open", shown);
    }

    function appendFileSync(file, data, options = undefined) {
        const [abs, shown] = target(file);
        result(native.fsWrite(abs, dataOf(data, options), true), "open", shown);
    }

    function existsSync(file) {
        try {
            return native.fsExists(target(file)[0]);
        } catch (_) {
            return false;
        }
    }

    function statRaw(abs, follow) {
        return native.fsStat(abs, follow);
    }

    function mkdirSync(dir, options = undefined) {
        const [abs, shown] = target(dir);
        const recursive = options !== null && typeof options === "object" && !!options.recursive;
        if (!recursive) {
            result(native.fsMkdir(abs, false), "mkdir", shown);
            return undefined;
        }
        // Node returns the first directory it made, if any.
        let first = abs;
        while (first !== "/" && !native.fsExists(path.dirname(first))) first = path.dirname(first);
        const existed = native.fsExists(abs);
        result(native.fsMkdir(abs, true), "mkdir", shown);
        return existed ? undefined : first;
    }

    class Dirent {
        #kind;
        constructor(name, kind, parentPath) {
            this.name = name;
            this.parentPath = parentPath;
            this.path = parentPath;
            this.#kind = kind;
        }
        isFile() { return this.#kind === "file"; }
        isDirectory() { return this.#kind === "dir"; }
        isSymbolicLink() { return this.#kind === "symlink"; }
        isBlockDevice() { return false; }
        isCharacterDevice() { return false; }
        isFIFO() { return false; }
        isSocket() { return false; }
    }

    function readdirSync(dir, options = undefined) {
        const [abs, shown] = target(dir === undefined ? "." : dir);
        const withTypes = options !== null && typeof options === "object" && !!options.withFileTypes;
        const recursive = options !== null && typeof options === "object" && !!options.recursive;
        const out = [];
        const walk = (at, prefix, depth) => {
            const entries = result(native.fsList(at, true), "scandir", depth === 0 ? shown : at);
            for (let i = 0; i < entries.length; i++) {
                const [name, kind] = entries[i];
                call(arrayPush, out, withTypes ? new Dirent(name, kind, at) : prefix + name);
                if (recursive && kind === "dir" && depth < 64) walk(at + "/" + name, prefix + name + "/", depth + 1);
            }
        };
        walk(abs, "", 0);
        const enc = encodingOf(options);
        if (enc === null && options !== undefined && !withTypes && (options === "buffer" || (options && options.encoding === "buffer"))) {
            for (let i = 0; i < out.length; i++) out[i] = Buffer.from(out[i]);
        }
        return out;
    }

    class Stats {
        #kind;
        constructor(raw) {
            this.#kind = raw.kind;
            this.dev = 0;
            this.mode = raw.kind === "dir" ? 0o40755 : raw.kind === "symlink" ? 0o120777 : 0o100644;
            this.nlink = 1;
            this.uid = 0;
            this.gid = 0;
            this.rdev = 0;
            this.blksize = 4096;
            this.ino = 0;
            this.size = raw.size;
            this.blocks = mathCeil(raw.size / 512);
            this.atimeMs = raw.atimeMs;
            this.mtimeMs = raw.mtimeMs;
            this.ctimeMs = raw.mtimeMs;
            this.birthtimeMs = raw.birthtimeMs;
            this.atime = new DateCtor(raw.atimeMs);
            this.mtime = new DateCtor(raw.mtimeMs);
            this.ctime = new DateCtor(raw.mtimeMs);
            this.birthtime = new DateCtor(raw.birthtimeMs);
        }
        isFile() { return this.#kind === "file"; }
        isDirectory() { return this.#kind === "dir"; }
        isSymbolicLink() { return this.#kind === "symlink"; }
        isBlockDevice() { return false; }
        isCharacterDevice() { return false; }
        isFIFO() { return false; }
        isSocket() { return false; }
    }

    function stat(file, options, follow) {
        const [abs, shown] = target(file);
        const raw = statRaw(abs, follow);
        if (raw.error === "ENOENT" && options !== null && typeof options === "object" && options.throwIfNoEntry === false) return undefined;
        return new Stats(result(raw, follow ? "stat" : "lstat", shown));
    }

    function statSync(file, options = undefined) {
        return stat(file, options, true);
    }

    function lstatSync(file, options = undefined) {
        return stat(file, options, false);
    }

    function unlinkSync(file) {
        const [abs, shown] = target(file);
        result(native.fsRemove(abs, false), "unlink", shown);
    }

    function rmdirSync(dir, options = undefined) {
        const [abs, shown] = target(dir);
        const raw = statRaw(abs, false);
        if (raw.error === undefined && raw.value.kind !== "dir") throw fail("ENOTDIR", "rmdir", shown);
        result(native.fsRemove(abs, !!(options && options.recursive)), "rmdir", shown);
    }

    function rmSync(file, options = undefined) {
        const [abs, shown] = target(file);
        const recursive = !!(options && options.recursive);
        const raw = statRaw(abs, false);
        if (raw.error === "ENOENT" && options && options.force) return;
        if (raw.error === undefined && raw.value.kind === "dir" && !recursive) {
            const e = fail("EISDIR", "rm", shown);
            e.code = "ERR_FS_EISDIR";
            e.message = "Path is a directory: rm returned EISDIR (is a directory) " + shown;
            throw e;
        }
        result(raw.error !== undefined ? raw : native.fsRemove(abs, recursive), "rm", shown);
    }

    function renameSync(from, to) {
        const [absFrom, shownFrom] = target(from, "oldPath");
        const [absTo, shownTo] = target(to, "newPath");
        result(native.fsRename(absFrom, absTo), "rename", shownFrom, shownTo);
    }

    function copyFileSync(from, to, mode = 0) {
        const [absFrom, shownFrom] = target(from, "src");
        const [absTo, shownTo] = target(to, "dest");
        if ((mode & 1) !== 0 && native.fsExists(absTo)) throw fail("EEXIST", "copyfile", shownFrom, shownTo);
        result(native.fsCopy(absFrom, absTo), "copyfile", shownFrom, shownTo);
    }

    function cpSync(from, to, options = undefined) {
        const [absFrom, shownFrom] = target(from, "src");
        const [absTo] = target(to, "dest");
        const raw = result(statRaw(absFrom, true), "cp", shownFrom);
        if (raw.kind !== "dir") {
            result(native.fsCopy(absFrom, absTo), "cp", shownFrom);
            return;
        }
        if (!(options && options.recursive)) {
            const e = fail("EISDIR", "cp", shownFrom);
            e.code = "ERR_FS_EISDIR";
            e.message = "Recursive option is required to copy a directory: cp returned EISDIR (" + shownFrom + " is a directory (not copied)) " + shownFrom;
            throw e;
        }
        result(native.fsMkdir(absTo, true), "mkdir", absTo);
        const entries = result(native.fsList(absFrom, true), "scandir", absFrom);
        for (let i = 0; i < entries.length; i++) cpSync(absFrom + "/" + entries[i][0], absTo + "/" + entries[i][0], options);
    }

    function accessSync(file, _mode = undefined) {
        const [abs, shown] = target(file);
        result(statRaw(abs, true), "access", shown);
    }

    function realpathSync(file) {
        const [abs, shown] = target(file);
        result(statRaw(abs, true), "realpath", shown);
        return abs;
    }
    realpathSync.native = realpathSync;

    function mkdtempSync(prefix) {
        const CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        for (let attempt = 0; ; attempt++) {
            let suffix = "";
            for (let i = 0; i < 6; i++) suffix += CHARS[(mathRandom() * CHARS.length) | 0];
            const [abs, shown] = target(StringCtor(prefix) + suffix, "prefix");
            const raw = native.fsMkdir(abs, false);
            if (raw.error === "EEXIST" && attempt < 16) continue;
            result(raw, "mkdtemp", shown);
            return shown;
        }
    }

    function writeSync(fd, data, ...rest) {
        if (fd !== 1 && fd !== 2) throw fail("EBADF", "write", StringCtor(fd));
        const bytes = dataOf(data, typeof rest[rest.length - 1] === "string" ? rest[rest.length - 1] : undefined);
        native.writeRaw(fd, bytes);
        return typeof bytes === "string" ? Buffer.byteLength(bytes) : bytes.length;
    }

    // A write stream that writes through at once.
    function createWriteStream(file, options = undefined) {
        const [abs, shown] = target(file);
        const append = flagOf(typeof options === "string" ? undefined : options)[0] === "a";
        if (!append) result(native.fsWrite(abs, "", false), "open", shown);
        const stream = new lib.EventEmitter();
        let finished = false;
        stream.path = shown;
        stream.bytesWritten = 0;
        stream.writable = true;
        stream.write = function (chunk, encoding = undefined, callback = undefined) {
            if (typeof encoding === "function") {
                callback = encoding;
                encoding = undefined;
            }
            const data = dataOf(chunk, encoding);
            result(native.fsWrite(abs, data, true), "write", shown);
            stream.bytesWritten += typeof data === "string" ? Buffer.byteLength(data) : data.length;
            if (typeof callback === "function") lib.later(() => callback(null));
            return true;
        };
        stream.end = function (chunk = undefined, encoding = undefined, callback = undefined) {
            if (typeof chunk === "function") {
                callback = chunk;
                chunk = undefined;
            }
            if (typeof encoding === "function") {
                callback = encoding;
                encoding = undefined;
            }
            if (chunk !== undefined && chunk !== null) stream.write(chunk, encoding);
            if (!finished) {
                finished = true;
                stream.writable = false;
                lib.later(() => {
                    stream.emit("finish");
                    stream.emit("close");
                    if (typeof callback === "function") callback();
                });
            }
            return stream;
        };
        stream.close = (callback) => stream.end(callback);
        stream.destroy = () => stream;
        stream.cork = stream.uncork = function () {};
        return stream;
    }

    function createReadStream(file, options = undefined) {
        const [abs, shown] = target(file);
        const stream = new lib.Readable(() => lib.toBuffer(result(native.fsRead(abs, false), "open", shown)));
        const enc = encodingOf(options);
        if (enc !== null) stream.setEncoding(enc);
        stream.path = shown;
        return stream;
    }

    const sync = {
        readFileSync, writeFileSync, appendFileSync, existsSync, mkdirSync, readdirSync, statSync, lstatSync,
        unlinkSync, rmdirSync, rmSync, renameSync, copyFileSync, cpSync, accessSync, realpathSync, mkdtempSync,
    };

    // The promise and callback forms of each synchronous call.
    const promises = {};
    const fs = { ...sync, writeSync, createWriteStream, createReadStream, Stats, Dirent };
    const names = Object.keys(sync);
    for (let i = 0; i < names.length; i++) {
        const f = sync[names[i]];
        const base = names[i].slice(0, -4);
        if (base === "exists") continue;
        promises[base] = async function (...args) {
            return reflectApply(f, undefined, args);
        };
        fs[base] = function (...args) {
            const callback = args.length > 0 ? args[args.length - 1] : undefined;
            if (typeof callback !== "function") throw lib.invalidArgType("cb", "of type function", callback);
            args.length -= 1;
            let value;
            let error = null;
            try {
                value = reflectApply(f, undefined, args);
            } catch (e) {
                error = e;
            }
            lib.later(() => (error === null ? callback(null, value) : callback(error)));
        };
    }
    fs.exists = function (file, callback) {
        const found = existsSync(file);
        lib.later(() => callback(found));
    };
    const constants = { F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1, COPYFILE_EXCL: 1, COPYFILE_FICLONE: 2, COPYFILE_FICLONE_FORCE: 4 };
    promises.constants = constants;
    fs.constants = constants;
    fs.promises = promises;
    const names2 = Object.keys(constants);
    for (let i = 0; i < names2.length; i++) fs[names2[i]] = constants[names2[i]];

    lib.fs = fs;
    lib.defineGlobal("fs", fs);
    lib.builtins.fs = () => fs;
    lib.builtins["fs/promises"] = () => promises;
})
