// node/buffer.js: `Buffer` (a Uint8Array with Node's encodings: utf8, hex,
// base64, base64url, latin1/binary, ascii, utf16le), the `buffer` module,
// and the `TextEncoder` / `TextDecoder` globals (UTF-8 only). What
// `fs.readFileSync` returns without an encoding.
(function (native, lib) {
    "use strict";

    const { call, wellFormed } = lib;
    const Uint8ArrayCtor = Uint8Array;
    const ArrayBufferCtor = ArrayBuffer;
    const DataViewCtor = DataView;
    const TypeErrorCtor = TypeError;
    const RangeErrorCtor = RangeError;
    const StringCtor = String;
    const isView = ArrayBuffer.isView;
    const isArray = Array.isArray;
    const fromCharCode = String.fromCharCode;
    const charCodeAt = String.prototype.charCodeAt;
    const toLowerCase = String.prototype.toLowerCase;
    const reflectApply = Reflect.apply;
    const typedSet = Uint8Array.prototype.set;
    const typedSubarray = Uint8Array.prototype.subarray;
    const typedFill = Uint8Array.prototype.fill;
    const typedIndexOf = Uint8Array.prototype.indexOf;
    const byteLengthOf = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), "byteLength").get;
    const HEX = "0123456789abcdef";
    const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    const decodeUtf8 = (bytes) => native.decodeUtf8(bytes);
    const encodeUtf8 = (s) => native.encodeUtf8(wellFormed(s));
    lib.decodeUtf8 = decodeUtf8;

    function normalizeEncoding(enc) {
        if (enc === undefined || enc === null) return "utf8";
        switch (call(toLowerCase, StringCtor(enc))) {
            case "utf8": case "utf-8": return "utf8";
            case "hex": return "hex";
            case "base64": return "base64";
            case "base64url": return "base64url";
            case "latin1": case "binary": return "latin1";
            case "ascii": return "ascii";
            case "utf16le": case "utf-16le": case "ucs2": case "ucs-2": return "utf16le";
            default: throw lib.nodeError(TypeErrorCtor, "ERR_UNKNOWN_ENCODING", "Unknown encoding: " + StringCtor(enc));
        }
    }

    function code(s, i) {
        return call(charCodeAt, s, i);
    }

    // Bytes of `s` in `encoding`, as a plain Uint8Array.
    function encode(s, encoding) {
        switch (encoding) {
            case "utf8": return encodeUtf8(s);
            case "latin1": case "ascii": {
                const out = new Uint8ArrayCtor(s.length);
                for (let i = 0; i < s.length; i++) out[i] = code(s, i) & 0xff;
                return out;
            }
            case "utf16le": {
                const out = new Uint8ArrayCtor(s.length * 2);
                for (let i = 0; i < s.length; i++) {
                    const c = code(s, i);
                    out[2 * i] = c & 0xff;
                    out[2 * i + 1] = c >> 8;
                }
                return out;
            }
            case "hex": {
                const n = s.length >> 1;
                const out = new Uint8ArrayCtor(n);
                let i = 0;
                for (; i < n; i++) {
                    const byte = parseInt(s[2 * i] + s[2 * i + 1], 16);
                    if (byte !== byte) break;
                    out[i] = byte;
                }
                return i === n ? out : call(typedSubarray, out, 0, i);
            }
            default: {
                // base64 and base64url both decode either alphabet; anything
                // else (whitespace, padding) is skipped.
                const out = new Uint8ArrayCtor((s.length * 3) >> 2);
                let bits = 0;
                let count = 0;
                let j = 0;
                for (let i = 0; i < s.length; i++) {
                    const c = code(s, i);
                    let v;
                    if (c >= 65 && c <= 90) v = c - 65;
                    else if (c >= 97 && c <= 122) v = c - 71;
                    else if (c >= 48 && c <= 57) v = c + 4;
                    else if (c === 43 || c === 45) v = 62;
                    else if (c === 47 || c === 95) v = 63;
                    else if (c === 61) break;
                    else continue;
                    bits = (bits << 6) | v;
                    count += 6;
                    if (count >= 8) {
                        count -= 8;
                        out[j++] = (bits >> count) & 0xff;
                    }
                }
                return call(typedSubarray, out, 0, j);
            }
        }
    }

    function decode(bytes, encoding) {
        switch (encoding) {
            case "utf8": return decodeUtf8(bytes);
            case "hex": {
                let out = "";
                for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i] >> 4] + HEX[bytes[i] & 15];
                return out;
            }
            case "base64": case "base64url": {
                const alphabet = encoding === "base64" ? B64 : B64URL;
                let out = "";
                let i = 0;
                for (; i + 2 < bytes.length; i += 3) {
                    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
                    out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + alphabet[n & 63];
                }
                const pad = encoding === "base64";
                if (bytes.length - i === 1) {
                    const n = bytes[i] << 16;
                    out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + (pad ? "==" : "");
                } else if (bytes.length - i === 2) {
                    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
                    out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + (pad ? "=" : "");
                }
                return out;
            }
            default: {
                const mask = encoding === "ascii" ? 0x7f : 0xff;
                const step = encoding === "utf16le" ? 2 : 1;
                let out = "";
                let units = [];
                for (let i = 0; i + step - 1 < bytes.length; i += step) {
                    units[units.length] = step === 2 ? bytes[i] | (bytes[i + 1] << 8) : bytes[i] & mask;
                    if (units.length >= 4096) {
                        out += reflectApply(fromCharCode, undefined, units);
                        units = [];
                    }
                }
                return out + reflectApply(fromCharCode, undefined, units);
            }
        }
    }

    function checkSize(size) {
        if (typeof size !== "number" || !(size >= 0) || size > 0x7fffffff) {
            throw lib.nodeError(RangeErrorCtor, "ERR_OUT_OF_RANGE", "The value of \"size\" is out of range. It must be >= 0 && <= 2147483647. Received " + StringCtor(size));
        }
    }

    class Buffer extends Uint8ArrayCtor {
        static from(value, encodingOrOffset = undefined, length = undefined) {
            if (typeof value === "string") return wrap(encode(value, normalizeEncoding(encodingOrOffset)));
            if (value instanceof ArrayBufferCtor || (typeof SharedArrayBuffer === "function" && value instanceof SharedArrayBuffer)) {
                const offset = encodingOrOffset === undefined ? 0 : +encodingOrOffset;
                return new Buffer(value, offset, length === undefined ? value.byteLength - offset : +length);
            }
            if (isView(value)) {
                const out = new Buffer(value.length === undefined ? call(byteLengthOf, value) : value.length);
                if (value.length === undefined) call(typedSet, out, new Uint8ArrayCtor(value.buffer, value.byteOffset, value.byteLength));
                else call(typedSet, out, value);
                return out;
            }
            if (value !== null && typeof value === "object") {
                if (value.type === "Buffer" && isArray(value.data)) return Buffer.from(value.data);
                if (typeof value.length === "number") {
                    const out = new Buffer(value.length);
                    for (let i = 0; i < out.length; i++) out[i] = value[i] & 0xff;
                    return out;
                }
                if (typeof value.valueOf === "function") {
                    const primitive = value.valueOf();
                    if (primitive !== value && primitive !== null && primitive !== undefined) return Buffer.from(primitive, encodingOrOffset, length);
                }
            }
            throw lib.invalidArgType("first argument", "of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object", value);
        }
        static alloc(size, fill = undefined, encoding = undefined) {
            checkSize(size);
            const out = new Buffer(size);
            if (fill !== undefined && fill !== 0) out.fill(fill, 0, size, encoding);
            return out;
        }
        static allocUnsafe(size) {
            checkSize(size);
            return new Buffer(size);
        }
        static allocUnsafeSlow(size) {
            return Buffer.allocUnsafe(size);
        }
        static byteLength(value, encoding = undefined) {
            if (typeof value === "string") return encode(value, normalizeEncoding(encoding)).length;
            if (isView(value) || value instanceof ArrayBufferCtor) return value.byteLength;
            throw lib.invalidArgType("string", "of type string or an instance of Buffer or ArrayBuffer", value);
        }
        static concat(list, totalLength = undefined) {
            if (!isArray(list)) throw lib.invalidArgType("list", "an instance of Array", list);
            let total = 0;
            for (let i = 0; i < list.length; i++) total += list[i].length;
            if (totalLength !== undefined) total = totalLength;
            const out = Buffer.alloc(total);
            let at = 0;
            for (let i = 0; i < list.length && at < total; i++) {
                const part = list[i];
                const n = part.length <= total - at ? part.length : total - at;
                call(typedSet, out, n === part.length ? part : call(typedSubarray, part, 0, n), at);
                at += n;
            }
            return out;
        }
        static isBuffer(value) {
            return value instanceof Buffer;
        }
        static isEncoding(encoding) {
            try {
                return typeof encoding === "string" && normalizeEncoding(encoding) !== undefined;
            } catch (_) {
                return false;
            }
        }
        static compare(a, b) {
            const n = a.length < b.length ? a.length : b.length;
            for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
            return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
        }
        toString(encoding = undefined, start = 0, end = this.length) {
            const enc = normalizeEncoding(encoding);
            start = start < 0 ? 0 : start;
            end = end > this.length ? this.length : end;
            if (end <= start) return "";
            return decode(start === 0 && end === this.length ? this : call(typedSubarray, this, start, end), enc);
        }
        toJSON() {
            const data = [];
            for (let i = 0; i < this.length; i++) data[i] = this[i];
            return { type: "Buffer", data };
        }
        equals(other) {
            return Buffer.compare(this, other) === 0;
        }
        compare(other) {
            return Buffer.compare(this, other);
        }
        write(string, offset = 0, length = undefined, encoding = undefined) {
            if (typeof offset === "string") {
                encoding = offset;
                offset = 0;
            } else if (typeof length === "string") {
                encoding = length;
                length = undefined;
            }
            const bytes = encode(StringCtor(string), normalizeEncoding(encoding));
            let n = this.length - offset;
            if (length !== undefined && length < n) n = length;
            if (bytes.length < n) n = bytes.length;
            call(typedSet, this, call(typedSubarray, bytes, 0, n), offset);
            return n;
        }
        fill(value, offset = 0, end = this.length, encoding = undefined) {
            if (typeof offset === "string") {
                encoding = offset;
                offset = 0;
                end = this.length;
            }
            if (typeof value === "string") {
                const bytes = encode(value, normalizeEncoding(encoding));
                if (bytes.length === 0) return call(typedFill, this, 0, offset, end);
                for (let i = offset, j = 0; i < end; i++, j = (j + 1) % bytes.length) this[i] = bytes[j];
                return this;
            }
            return call(typedFill, this, typeof value === "number" ? value & 0xff : 0, offset, end);
        }
        slice(start = undefined, end = undefined) {
            // Node's Buffer#slice shares memory, like subarray.
            return call(typedSubarray, this, start, end);
        }
        copy(target, targetStart = 0, sourceStart = 0, sourceEnd = this.length) {
            let n = sourceEnd - sourceStart;
            if (n > target.length - targetStart) n = target.length - targetStart;
            if (n <= 0) return 0;
            call(typedSet, target, call(typedSubarray, this, sourceStart, sourceStart + n), targetStart);
            return n;
        }
        indexOf(value, byteOffset = 0, encoding = undefined) {
            if (typeof value === "number") return call(typedIndexOf, this, value & 0xff, byteOffset);
            const needle = typeof value === "string" ? encode(value, normalizeEncoding(encoding)) : value;
            if (byteOffset < 0) byteOffset += this.length;
            if (needle.length === 0) return byteOffset <= this.length ? byteOffset : this.length;
            outer: for (let i = byteOffset < 0 ? 0 : byteOffset; i + needle.length <= this.length; i++) {
                for (let j = 0; j < needle.length; j++) if (this[i + j] !== needle[j]) continue outer;
                return i;
            }
            return -1;
        }
        includes(value, byteOffset = 0, encoding = undefined) {
            return this.indexOf(value, byteOffset, encoding) !== -1;
        }
    }

    // Typed reads and writes: readUInt16LE(offset), writeInt32BE(value, offset), ...
    const NUMERIC = [
        ["UInt8", "Uint8", 1], ["Int8", "Int8", 1],
        ["UInt16", "Uint16", 2], ["Int16", "Int16", 2],
        ["UInt32", "Uint32", 4], ["Int32", "Int32", 4],
        ["Float", "Float32", 4], ["Double", "Float64", 8],
        ["BigUInt64", "BigUint64", 8], ["BigInt64", "BigInt64", 8],
    ];
    function view(buf, offset, size) {
        if (!(offset >= 0) || offset + size > buf.length) {
            throw lib.nodeError(RangeErrorCtor, "ERR_OUT_OF_RANGE", "The value of \"offset\" is out of range. It must be >= 0 and <= " + (buf.length - size) + ". Received " + StringCtor(offset));
        }
        return new DataViewCtor(buf.buffer, buf.byteOffset + offset, size);
    }
    for (const [name, dv, size] of NUMERIC) {
        const get = DataViewCtor.prototype["get" + dv];
        const set = DataViewCtor.prototype["set" + dv];
        const ends = size === 1 ? [""] : ["LE", "BE"];
        for (const end of ends) {
            const little = end === "LE";
            const read = function (offset = 0) { return call(get, view(this, offset, size), 0, little); };
            const write = function (value, offset = 0) {
                call(set, view(this, offset, size), 0, value, little);
                return offset + size;
            };
            Buffer.prototype["read" + name + end] = read;
            Buffer.prototype["write" + name + end] = write;
            if (name.startsWith("UInt")) {
                Buffer.prototype["readUint" + name.slice(4) + end] = read;
                Buffer.prototype["writeUint" + name.slice(4) + end] = write;
            }
        }
    }

    // A Uint8Array's bytes as a Buffer, without copying.
    function wrap(bytes) {
        return new Buffer(bytes.buffer, bytes.byteOffset, bytes.length);
    }
    lib.toBuffer = wrap;
    lib.Buffer = Buffer;
    lib.encode = (s, encoding) => encode(s, normalizeEncoding(encoding));
    lib.decode = (bytes, encoding) => decode(bytes, normalizeEncoding(encoding));
    lib.normalizeEncoding = normalizeEncoding;

    lib.setDisplay((v) => {
        if (!(v instanceof Buffer)) return undefined;
        let out = "<Buffer";
        const n = v.length < 50 ? v.length : 50;
        for (let i = 0; i < n; i++) out += " " + HEX[v[i] >> 4] + HEX[v[i] & 15];
        if (v.length > n) out += " ... " + (v.length - n) + " more byte" + (v.length - n === 1 ? "" : "s");
        return out + ">";
    });

    class TextEncoder {
        get encoding() { return "utf-8"; }
        encode(input = "") {
            return encodeUtf8(StringCtor(input));
        }
        encodeInto(input, destination) {
            const bytes = encodeUtf8(StringCtor(input));
            const n = bytes.length < destination.length ? bytes.length : destination.length;
            call(typedSet, destination, call(typedSubarray, bytes, 0, n));
            return { read: input.length, written: n };
        }
    }

    class TextDecoder {
        #ignoreBOM;
        constructor(label = "utf-8", options = undefined) {
            const l = call(toLowerCase, StringCtor(label));
            if (l !== "utf-8" && l !== "utf8" && l !== "unicode-1-1-utf-8") {
                throw lib.nodeError(RangeErrorCtor, "ERR_ENCODING_NOT_SUPPORTED", "The \"" + StringCtor(label) + "\" encoding is not supported");
            }
            this.#ignoreBOM = !!(options && options.ignoreBOM);
        }
        get encoding() { return "utf-8"; }
        get ignoreBOM() { return this.#ignoreBOM; }
        decode(input = undefined) {
            if (input === undefined) return "";
            let bytes;
            if (input instanceof ArrayBufferCtor) bytes = new Uint8ArrayCtor(input);
            else if (isView(input)) bytes = new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
            else throw lib.invalidArgType("input", "an instance of ArrayBuffer or ArrayBufferView", input);
            const text = decodeUtf8(bytes);
            return !this.#ignoreBOM && code(text, 0) === 0xfeff ? text.slice(1) : text;
        }
    }

    lib.defineGlobal("Buffer", Buffer);
    lib.defineGlobal("TextEncoder", TextEncoder);
    lib.defineGlobal("TextDecoder", TextDecoder);
    lib.builtins.buffer = () => ({ Buffer, constants: { MAX_LENGTH: 0x7fffffff, MAX_STRING_LENGTH: 0x3fffffff }, kMaxLength: 0x7fffffff });
})
