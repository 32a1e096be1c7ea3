// node/path.js: `path` (POSIX), as Node's `path.posix`. Relative paths
// resolve against `process.cwd()` (`lib.cwd`, set by node/process.js).
(function (native, lib) {
    "use strict";

    const { call } = lib;
    const charCodeAt = String.prototype.charCodeAt;
    const stringSlice = String.prototype.slice;
    const lastIndexOf = String.prototype.lastIndexOf;
    const SLASH = 47;
    const DOT = 46;

    // Until node/process.js replaces it.
    lib.cwd = () => "/work";

    function code(s, i) {
        return call(charCodeAt, s, i);
    }

    function slice(s, from, to) {
        return call(stringSlice, s, from, to);
    }

    function checkString(value, name) {
        if (typeof value !== "string") throw lib.invalidArgType(name, "of type string", value);
    }

    // `path` without its "." and ".." segments (".." above the start kept
    // only when `allowAboveRoot`), without repeated or trailing slashes.
    function normalizeString(path, allowAboveRoot) {
        let res = "";
        let lastSegmentLength = 0;
        let lastSlash = -1;
        let dots = 0;
        let c = 0;
        for (let i = 0; i <= path.length; ++i) {
            if (i < path.length) c = code(path, i);
            else if (c === SLASH) break;
            else c = SLASH;
            if (c === SLASH) {
                if (lastSlash === i - 1 || dots === 1) {
                    // An empty or "." segment.
                } else if (dots === 2) {
                    if (res.length < 2 || lastSegmentLength !== 2 || code(res, res.length - 1) !== DOT || code(res, res.length - 2) !== DOT) {
                        if (res.length > 2) {
                            const at = call(lastIndexOf, res, "/");
                            if (at === -1) {
                                res = "";
                                lastSegmentLength = 0;
                            } else {
                                res = slice(res, 0, at);
                                lastSegmentLength = res.length - 1 - call(lastIndexOf, res, "/");
                            }
                            lastSlash = i;
                            dots = 0;
                            continue;
                        } else if (res.length !== 0) {
                            res = "";
                            lastSegmentLength = 0;
                            lastSlash = i;
                            dots = 0;
                            continue;
                        }
                    }
                    if (allowAboveRoot) {
                        res += res.length > 0 ? "/.." : "..";
                        lastSegmentLength = 2;
                    }
                } else {
                    if (res.length > 0) res += "/" + slice(path, lastSlash + 1, i);
                    else res = slice(path, lastSlash + 1, i);
                    lastSegmentLength = i - lastSlash - 1;
                }
                lastSlash = i;
                dots = 0;
            } else if (c === DOT && dots !== -1) {
                ++dots;
            } else {
                dots = -1;
            }
        }
        return res;
    }

    function resolve(...args) {
        let resolved = "";
        let absolute = false;
        for (let i = args.length - 1; i >= -1 && !absolute; i--) {
            const p = i >= 0 ? args[i] : lib.cwd();
            checkString(p, "paths[" + i + "]");
            if (p.length === 0) continue;
            resolved = p + "/" + resolved;
            absolute = code(p, 0) === SLASH;
        }
        resolved = normalizeString(resolved, !absolute);
        if (absolute) return "/" + resolved;
        return resolved.length > 0 ? resolved : ".";
    }

    function normalize(p) {
        checkString(p, "path");
        if (p.length === 0) return ".";
        const absolute = code(p, 0) === SLASH;
        const trailing = code(p, p.length - 1) === SLASH;
        p = normalizeString(p, !absolute);
        if (p.length === 0) {
            if (absolute) return "/";
            return trailing ? "./" : ".";
        }
        if (trailing) p += "/";
        return absolute ? "/" + p : p;
    }

    function isAbsolute(p) {
        checkString(p, "path");
        return p.length > 0 && code(p, 0) === SLASH;
    }

    function join(...args) {
        let joined;
        for (let i = 0; i < args.length; i++) {
            checkString(args[i], "path");
            if (args[i].length > 0) joined = joined === undefined ? args[i] : joined + "/" + args[i];
        }
        return joined === undefined ? "." : normalize(joined);
    }

    function relative(from, to) {
        checkString(from, "from");
        checkString(to, "to");
        if (from === to) return "";
        from = resolve(from);
        to = resolve(to);
        if (from === to) return "";
        const fromStart = 1;
        const fromEnd = from.length;
        const fromLen = fromEnd - fromStart;
        const toStart = 1;
        const toLen = to.length - toStart;
        const length = fromLen < toLen ? fromLen : toLen;
        let lastCommonSep = -1;
        let i = 0;
        for (; i < length; i++) {
            const c = code(from, fromStart + i);
            if (c !== code(to, toStart + i)) break;
            else if (c === SLASH) lastCommonSep = i;
        }
        if (i === length) {
            if (toLen > length) {
                if (code(to, toStart + i) === SLASH) return slice(to, toStart + i + 1);
                if (i === 0) return slice(to, toStart + i);
            } else if (fromLen > length) {
                if (code(from, fromStart + i) === SLASH) lastCommonSep = i;
                else if (i === 0) lastCommonSep = 0;
            }
        }
        let out = "";
        for (i = fromStart + lastCommonSep + 1; i <= fromEnd; ++i) {
            if (i === fromEnd || code(from, i) === SLASH) out += out.length === 0 ? ".." : "/..";
        }
        return out + slice(to, toStart + lastCommonSep);
    }

    function dirname(p) {
        checkString(p, "path");
        if (p.length === 0) return ".";
        const hasRoot = code(p, 0) === SLASH;
        let end = -1;
        let matchedSlash = true;
        for (let i = p.length - 1; i >= 1; --i) {
            if (code(p, i) === SLASH) {
                if (!matchedSlash) {
                    end = i;
                    break;
                }
            } else {
                matchedSlash = false;
            }
        }
        if (end === -1) return hasRoot ? "/" : ".";
        if (hasRoot && end === 1) return "//";
        return slice(p, 0, end);
    }

    function basename(p, suffix) {
        if (suffix !== undefined) checkString(suffix, "suffix");
        checkString(p, "path");
        let start = 0;
        let end = -1;
        let matchedSlash = true;
        if (suffix !== undefined && suffix.length > 0 && suffix.length <= p.length) {
            if (suffix === p) return "";
            let extIdx = suffix.length - 1;
            let firstNonSlashEnd = -1;
            for (let i = p.length - 1; i >= 0; --i) {
                const c = code(p, i);
                if (c === SLASH) {
                    if (!matchedSlash) {
                        start = i + 1;
                        break;
                    }
                } else {
                    if (firstNonSlashEnd === -1) {
                        matchedSlash = false;
                        firstNonSlashEnd = i + 1;
                    }
                    if (extIdx >= 0) {
                        if (c === code(suffix, extIdx)) {
                            if (--extIdx === -1) end = i;
                        } else {
                            extIdx = -1;
                            end = firstNonSlashEnd;
                        }
                    }
                }
            }
            if (start === end) end = firstNonSlashEnd;
            else if (end === -1) end = p.length;
            return slice(p, start, end);
        }
        for (let i = p.length - 1; i >= 0; --i) {
            if (code(p, i) === SLASH) {
                if (!matchedSlash) {
                    start = i + 1;
                    break;
                }
            } else if (end === -1) {
                matchedSlash = false;
                end = i + 1;
            }
        }
        return end === -1 ? "" : slice(p, start, end);
    }

    function extname(p) {
        checkString(p, "path");
        let startDot = -1;
        let startPart = 0;
        let end = -1;
        let matchedSlash = true;
        let preDotState = 0;
        for (let i = p.length - 1; i >= 0; --i) {
            const c = code(p, i);
            if (c === SLASH) {
                if (!matchedSlash) {
                    startPart = i + 1;
                    break;
                }
                continue;
            }
            if (end === -1) {
                matchedSlash = false;
                end = i + 1;
            }
            if (c === DOT) {
                if (startDot === -1) startDot = i;
                else if (preDotState !== 1) preDotState = 1;
            } else if (startDot !== -1) {
                preDotState = -1;
            }
        }
        if (startDot === -1 || end === -1 || preDotState === 0 ||
            (preDotState === 1 && startDot === end - 1 && startDot === startPart + 1)) {
            return "";
        }
        return slice(p, startDot, end);
    }

    function parse(p) {
        checkString(p, "path");
        const out = { root: "", dir: "", base: "", ext: "", name: "" };
        if (p.length === 0) return out;
        if (code(p, 0) === SLASH) out.root = "/";
        let trimmed = p;
        while (trimmed.length > 1 && code(trimmed, trimmed.length - 1) === SLASH) trimmed = slice(trimmed, 0, -1);
        if (trimmed === "/") {
            out.dir = "/";
            return out;
        }
        out.base = basename(trimmed);
        out.ext = extname(out.base);
        out.name = slice(out.base, 0, out.base.length - out.ext.length);
        const at = call(lastIndexOf, trimmed, "/");
        out.dir = at > 0 ? slice(trimmed, 0, at) : at === 0 ? "/" : "";
        return out;
    }

    function format(obj) {
        if (obj === null || typeof obj !== "object") throw lib.invalidArgType("pathObject", "of type object", obj);
        const dir = obj.dir || obj.root;
        const ext = obj.ext ? (code(obj.ext, 0) === DOT ? "" : ".") + obj.ext : "";
        const base = obj.base || (obj.name || "") + ext;
        if (!dir) return base;
        return dir === obj.root ? dir + base : dir + "/" + base;
    }

    const path = {
        resolve, normalize, isAbsolute, join, relative, dirname, basename, extname, parse, format,
        toNamespacedPath: (p) => p,
        sep: "/",
        delimiter: ":",
    };
    path.posix = path;
    lib.path = path;
    lib.builtins.path = () => path;
    lib.builtins["path/posix"] = () => path;
})
