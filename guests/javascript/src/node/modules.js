// node/modules.js: how a specifier becomes a module, for `import` (through
// the Rust loader, modules.rs) and for CommonJS `require`, as Node does it
// inside `/work`:
//
// - `node:fs` or `fs`: a built-in (`lib.builtins`); the ones this sandbox
//   cannot offer (child_process, net, http, ...) fail with the reason.
// - "./x", "../x", "/work/x", "file:///work/x": a file, tried as given,
//   then with .js, .mjs, .cjs, .json, then as a directory (package.json
//   "main", then index.js, index.mjs, index.cjs, index.json). Nothing
//   outside /work loads.
// - "pkg" or "pkg/sub": node_modules/pkg in the importing file's directory
//   or one above it (up to /work), by package.json "exports" (the
//   "import"/"require", "node" and "default" conditions), "main" or index.
//
// A file is an ES module if it ends in .mjs, CommonJS if .cjs, JSON if
// .json; a .js file follows its nearest package.json's "type", and without
// one is an ES module if it has import/export statements or import.meta.
// Import chains and require() nesting are limited to MAX_DEPTH.
(function (native, lib) {
    "use strict";

    const { call, hidePreludeFrames, path, wellFormed, show } = lib;
    const ErrorCtor = Error;
    const SyntaxErrorCtor = SyntaxError;
    const RangeErrorCtor = RangeError;
    const TypeErrorCtor = TypeError;
    const StringCtor = String;
    const create = Object.create;
    const hasOwn = Object.hasOwn;
    const objectKeys = Object.keys;
    const defineProperty = Object.defineProperty;
    const isArray = Array.isArray;
    const parseJson = JSON.parse;
    const stringify = JSON.stringify;
    const MapCtor = Map;
    const mapGet = Map.prototype.get;
    const mapSet = Map.prototype.set;
    const mapHas = Map.prototype.has;
    const stringSlice = String.prototype.slice;
    const startsWith = String.prototype.startsWith;
    const endsWith = String.prototype.endsWith;
    const indexOf = String.prototype.indexOf;
    const charCodeAt = String.prototype.charCodeAt;
    const isWellFormed = String.prototype.isWellFormed;
    const stringReplace = String.prototype.replace;
    const regexpTest = RegExp.prototype.test;
    const arrayPush = Array.prototype.push;
    const arrayJoin = Array.prototype.join;
    const promiseThen = Promise.prototype.then;

    const WORK = "/work";
    const MAX_DEPTH = 256;
    const EXTENSIONS = [".js", ".mjs", ".cjs", ".json"];
    const WRAP = "(function (exports, require, module, __filename, __dirname) { ";
    // Import/export statements or import.meta: an ES module.
    const ESM_SYNTAX = /^[ \t]*(?:import\s*[\w*{$"']|export\s*(?:[{*]|default\b|const\b|let\b|var\b|function\b|class\b|async\b))|\bimport\.meta\b/m;

    // Built-ins this sandbox does not have, and why.
    const NO_PROCESSES = "there are no processes in this sandbox";
    const NO_SOCKETS = "there are no sockets in this sandbox; HTTP goes through fetch() (the run's grants)";
    const UNAVAILABLE = {
        child_process: NO_PROCESSES, cluster: NO_PROCESSES, worker_threads: "there are no threads in this sandbox",
        net: NO_SOCKETS, tls: NO_SOCKETS, dgram: NO_SOCKETS, dns: NO_SOCKETS, http: NO_SOCKETS, https: NO_SOCKETS, http2: NO_SOCKETS,
        crypto: "it is not provided (Math.random() is not for secrets; there is no hashing or encryption)",
        zlib: "it is not provided", stream: "it is not provided (fs and process have whole-file streams)",
        vm: "it is not provided (the JavaScript engine is QuickJS, not V8)", v8: "the JavaScript engine is QuickJS, not V8",
        inspector: "it is not provided", repl: "it is not provided", sqlite: "it is not provided",
        async_hooks: "it is not provided", diagnostics_channel: "it is not provided", domain: "it is not provided",
        trace_events: "it is not provided", wasi: "it is not provided", test: "it is not provided", punycode: "it is not provided",
    };

    function slice(s, from, to) {
        return call(stringSlice, s, from, to);
    }

    function starts(s, prefix) {
        return call(startsWith, s, prefix);
    }

    function inWork(p) {
        return p === WORK || starts(p, WORK + "/");
    }

    // ---- built-ins ----

    const builtinValues = create(null);

    function builtin(name) {
        if (!hasOwn(builtinValues, name)) builtinValues[name] = lib.builtins[name]();
        return builtinValues[name];
    }

    function builtinName(specifier) {
        const name = starts(specifier, "node:") ? slice(specifier, 5) : specifier;
        return hasOwn(lib.builtins, name) ? name : null;
    }

    // ---- files and packages ----

    function kindOf(abs) {
        const raw = native.fsStat(abs, true);
        return raw.error === undefined ? raw.value.kind : null;
    }

    // A source file's text: without a byte-order mark, and with a "#!"
    // line made a comment (lines keep their numbers).
    function readSource(file) {
        let text = lib.readText(file, file);
        if (call(charCodeAt, text, 0) === 0xfeff) text = slice(text, 1);
        if (starts(text, "#!")) text = "//" + slice(text, 2);
        return text;
    }

    function parseJsonText(text, file) {
        try {
            return parseJson(text);
        } catch (e) {
            throw hidePreludeFrames(new SyntaxErrorCtor(file + ": " + e.message));
        }
    }

    // package.json of a directory, parsed, or null; read once per instance.
    const packages = new MapCtor();

    function packageAt(dir) {
        if (call(mapHas, packages, dir)) return call(mapGet, packages, dir);
        const file = (dir === "/" ? "" : dir) + "/package.json";
        let pkg = null;
        if (kindOf(file) === "file") {
            try {
                pkg = parseJson(lib.readText(file, file));
            } catch (e) {
                throw lib.nodeError(ErrorCtor, "ERR_INVALID_PACKAGE_CONFIG", "Invalid package config " + file + ": " + e.message);
            }
            if (pkg === null || typeof pkg !== "object") pkg = {};
        }
        call(mapSet, packages, dir, pkg);
        return pkg;
    }

    // "module", "commonjs" or undefined: the "type" of the nearest package.json.
    function packageType(file) {
        for (let dir = path.dirname(file); inWork(dir); dir = path.dirname(dir)) {
            const pkg = packageAt(dir);
            if (pkg !== null) return pkg.type === "module" || pkg.type === "commonjs" ? pkg.type : undefined;
            if (dir === WORK || path.basename(dir) === "node_modules") break;
        }
        return undefined;
    }

    // "esm", "cjs" or "json".
    function formatOf(file, text) {
        const ext = path.extname(file);
        if (ext === ".mjs") return "esm";
        if (ext === ".cjs") return "cjs";
        if (ext === ".json") return "json";
        const type = packageType(file);
        if (type === "module") return "esm";
        if (type === "commonjs") return "cjs";
        return call(regexpTest, ESM_SYNTAX, text === undefined ? readSource(file) : text) ? "esm" : "cjs";
    }

    function resolveIndex(dir) {
        for (let i = 0; i < EXTENSIONS.length; i++) {
            const index = dir + "/index" + EXTENSIONS[i];
            if (kindOf(index) === "file") return index;
        }
        return null;
    }

    function resolveFile(p) {
        const kind = kindOf(p);
        if (kind === "file") return p;
        for (let i = 0; i < EXTENSIONS.length; i++) {
            if (kindOf(p + EXTENSIONS[i]) === "file") return p + EXTENSIONS[i];
        }
        return kind === "dir" ? resolveDirectory(p) : null;
    }

    function resolveDirectory(dir) {
        const pkg = packageAt(dir);
        if (pkg !== null && typeof pkg.main === "string" && pkg.main !== "") {
            const main = path.resolve(dir, pkg.main);
            if (inWork(main)) {
                const kind = kindOf(main);
                if (kind === "file") return main;
                for (let i = 0; i < EXTENSIONS.length; i++) {
                    if (kindOf(main + EXTENSIONS[i]) === "file") return main + EXTENSIONS[i];
                }
                if (kind === "dir") {
                    const index = resolveIndex(main);
                    if (index !== null) return index;
                }
            }
        }
        return resolveIndex(dir);
    }

    function conditionTarget(target, mode) {
        if (typeof target === "string") return target;
        if (isArray(target)) {
            for (let i = 0; i < target.length; i++) {
                const found = conditionTarget(target[i], mode);
                if (found !== null) return found;
            }
            return null;
        }
        if (target !== null && typeof target === "object") {
            const keys = objectKeys(target);
            for (let i = 0; i < keys.length; i++) {
                const key = keys[i];
                if (key === mode || key === "node" || key === "default") {
                    const found = conditionTarget(target[key], mode);
                    if (found !== null) return found;
                }
            }
        }
        return null;
    }

    // The target of `sub` ("." or "./x") in package.json "exports", null
    // for none.
    function exportsTarget(exp, sub, mode) {
        const keys = exp !== null && typeof exp === "object" && !isArray(exp) ? objectKeys(exp) : [];
        if (typeof exp === "string" || isArray(exp) || (keys.length > 0 && keys[0][0] !== ".")) {
            return sub === "." ? conditionTarget(exp, mode) : null;
        }
        if (hasOwn(exp, sub)) return conditionTarget(exp[sub], mode);
        for (let i = 0; i < keys.length; i++) {
            const star = call(indexOf, keys[i], "*");
            if (star < 0) continue;
            const prefix = slice(keys[i], 0, star);
            const suffix = slice(keys[i], star + 1);
            if (starts(sub, prefix) && call(endsWith, sub, suffix) && sub.length >= keys[i].length - 1) {
                const target = conditionTarget(exp[keys[i]], mode);
                const matched = slice(sub, prefix.length, sub.length - suffix.length);
                return target === null ? null : call(stringReplace, target, /\*/g, () => matched);
            }
        }
        return null;
    }

    function notFound(specifier, from, mode, note = undefined) {
        const message = "Cannot find module '" + specifier + "'" +
            (from === undefined ? "" : mode === "import" ? " imported from " + from : "\nRequire stack:\n- " + from) +
            (note === undefined ? "" : "\n" + note);
        return lib.nodeError(ErrorCtor, mode === "import" ? "ERR_MODULE_NOT_FOUND" : "MODULE_NOT_FOUND", message);
    }

    function resolvePackage(specifier, baseDir, mode, from) {
        let end = call(indexOf, specifier, "/");
        if (specifier[0] === "@" && end > 0) end = call(indexOf, specifier, "/", end + 1);
        const name = end < 0 ? specifier : slice(specifier, 0, end);
        const sub = end < 0 ? "." : "." + slice(specifier, end);
        const hint = "(bare names are looked up in node_modules/ folders inside /work; this sandbox has no package manager)";
        if (name === "" || name[0] === "." || call(indexOf, name, "\\") >= 0 || call(indexOf, name, "%") >= 0) throw notFound(specifier, from, mode);
        for (let dir = inWork(baseDir) ? baseDir : WORK; ; dir = path.dirname(dir)) {
            const pkgDir = dir + "/node_modules/" + name;
            if (path.basename(dir) !== "node_modules" && kindOf(pkgDir) === "dir") {
                const pkg = packageAt(pkgDir);
                let found;
                if (pkg !== null && pkg.exports !== undefined && pkg.exports !== null) {
                    const target = exportsTarget(pkg.exports, sub, mode);
                    if (target === null) {
                        throw lib.nodeError(ErrorCtor, "ERR_PACKAGE_PATH_NOT_EXPORTED", (sub === "." ? "No \"exports\" main defined" : "Package subpath '" + sub + "' is not defined by \"exports\"") + " in " + pkgDir + "/package.json" + (from === undefined ? "" : " imported from " + from));
                    }
                    const file = path.resolve(pkgDir, target);
                    found = starts(file, pkgDir + "/") ? resolveFile(file) : null;
                } else {
                    found = sub === "." ? resolveDirectory(pkgDir) : resolveFile(pkgDir + slice(sub, 1));
                }
                if (found !== null) return found;
                throw notFound(specifier, from, mode);
            }
            if (dir === WORK) break;
        }
        if (mode === "import") {
            throw lib.nodeError(ErrorCtor, "ERR_MODULE_NOT_FOUND", "Cannot find package '" + name + "'" + (from === undefined ? "" : " imported from " + from) + "\n" + hint);
        }
        throw notFound(specifier, from, mode, hint);
    }

    // The key of `specifier` seen from `baseDir`: "node:NAME" for a
    // built-in, else an absolute path inside /work. `from` (the importing
    // file, if any) and `mode` ("import" or "require") shape the errors.
    function resolveSpecifier(specifier, baseDir, mode, from) {
        if (typeof specifier !== "string") throw lib.invalidArgType("id", "of type string", specifier);
        const name = builtinName(specifier);
        if (name !== null) return "node:" + name;
        const bare = starts(specifier, "node:") ? slice(specifier, 5) : specifier;
        const top = call(indexOf, bare, "/") < 0 ? bare : slice(bare, 0, call(indexOf, bare, "/"));
        if (hasOwn(UNAVAILABLE, top) && (top !== "test" || starts(specifier, "node:"))) {
            throw lib.nodeError(ErrorCtor, "ERR_UNKNOWN_BUILTIN_MODULE", "Cannot find module '" + specifier + "': node:" + bare + " is not available here (" + UNAVAILABLE[top] + ")");
        }
        if (starts(specifier, "node:")) throw lib.nodeError(ErrorCtor, "ERR_UNKNOWN_BUILTIN_MODULE", "No such built-in module: " + specifier);
        let file;
        if (starts(specifier, "file:")) {
            try {
                file = lib.fileURLToPath(specifier);
            } catch (_) {
                throw notFound(specifier, from, mode);
            }
        } else if (specifier[0] === "/" || starts(specifier, "./") || starts(specifier, "../") || specifier === "." || specifier === "..") {
            file = path.resolve(baseDir, specifier);
        } else if (call(regexpTest, /^[a-zA-Z][a-zA-Z0-9+.-]+:/, specifier)) {
            throw lib.nodeError(ErrorCtor, "ERR_UNSUPPORTED_ESM_URL_SCHEME", "Only file: and node: URLs can be loaded here, not " + specifier);
        } else {
            return resolvePackage(specifier, baseDir, mode, from);
        }
        if (!inWork(file)) throw notFound(specifier, from, mode, "(only files inside /work can be loaded)");
        const found = resolveFile(file);
        // Node names the file it looked for when importing, the specifier
        // when requiring.
        if (found === null || !inWork(found)) throw notFound(mode === "import" ? file : specifier, from, mode);
        return found;
    }

    // ---- ES modules (the Rust loader's hooks) ----

    // Import depth by module key: a module found first at depth n imports
    // at depth n + 1.
    const depthOf = new MapCtor();

    lib.resolveHook = function (specifier, base) {
        const fromFile = base[0] === "/";
        const key = resolveSpecifier(specifier, fromFile ? path.dirname(base) : lib.cwd(), "import", fromFile ? base : undefined);
        if (!starts(key, "node:") && !call(mapHas, depthOf, key)) {
            const depth = (fromFile && call(mapGet, depthOf, base)) || 0;
            if (depth >= MAX_DEPTH) {
                throw hidePreludeFrames(new RangeErrorCtor("Import chain too deep: more than " + MAX_DEPTH + " modules each importing the next (at " + key + ")"));
            }
            call(mapSet, depthOf, key, depth + 1);
        }
        return key;
    };

    function fileMeta(key) {
        const dir = path.dirname(key);
        return {
            url: lib.pathToFileURL(key).href,
            filename: key,
            dirname: dir,
            resolve(specifier) {
                const found = resolveSpecifier(StringCtor(specifier), dir, "import", key);
                return starts(found, "node:") ? found : lib.pathToFileURL(found).href;
            },
        };
    }

    // A module that exports `value` as its default and, when `named`, each
    // of its own enumerable properties by name.
    function synthetic(value, named) {
        let source = "const m = import.meta.value;\nexport default m;\n";
        if (named && value !== null && (typeof value === "object" || typeof value === "function")) {
            const keys = objectKeys(value);
            const names = [];
            for (let i = 0; i < keys.length; i++) {
                if (keys[i] === "default" || !call(isWellFormed, keys[i])) continue;
                const local = "e" + names.length;
                source += "const " + local + " = m[" + stringify(keys[i]) + "];\n";
                call(arrayPush, names, local + " as " + stringify(keys[i]));
            }
            if (names.length > 0) source += "export { " + call(arrayJoin, names, ", ") + " };\n";
        }
        return { source, meta: { value } };
    }

    // `{source, meta}` of the module `key` (`source` given for code that is
    // not in a file: `node -e` with import statements).
    lib.loadHook = function (key, source) {
        if (starts(key, "node:")) return synthetic(builtin(slice(key, 5)), true);
        if (source !== undefined && source !== null) return { source, meta: fileMeta(key) };
        const text = readSource(key);
        switch (formatOf(key, text)) {
            case "json": return synthetic(parseJsonText(text, key), false);
            // Run now, while the importing module links (Node runs it in
            // order with the other modules' bodies).
            case "cjs": return synthetic(loadCommonJs(key, null, false, text).exports, true);
            default: return { source: text, meta: fileMeta(key) };
        }
    };

    // ---- CommonJS ----

    const cache = create(null);
    let mainModule;
    let requireDepth = 0;

    function nodeModulePaths(dir) {
        const out = [];
        for (let d = dir; ; d = path.dirname(d)) {
            if (path.basename(d) !== "node_modules") call(arrayPush, out, (d === "/" ? "" : d) + "/node_modules");
            if (d === "/" || d === ".") break;
        }
        return out;
    }

    class Module {
        constructor(id = "", parent = null) {
            this.id = id;
            this.path = path.dirname(id);
            this.exports = {};
            this.filename = id;
            this.loaded = false;
            this.children = [];
            this.paths = nodeModulePaths(this.path);
            defineProperty(this, "parent", { value: parent, writable: true, configurable: true, enumerable: false });
        }
        require(id) {
            return requireFrom(this, id);
        }
    }

    function makeRequire(mod) {
        const require = function require(id) {
            return requireFrom(mod, id);
        };
        require.resolve = function resolve(request) {
            const key = resolveSpecifier(request, mod.path, "require", mod.filename || undefined);
            return starts(key, "node:") && !starts(request, "node:") ? slice(key, 5) : key;
        };
        require.resolve.paths = (request) => (builtinName(StringCtor(request)) !== null ? null : nodeModulePaths(mod.path));
        require.cache = cache;
        require.extensions = create(null);
        defineProperty(require, "main", { get: () => mainModule, enumerable: true, configurable: true });
        return require;
    }

    function requireFrom(mod, id) {
        if (typeof id !== "string") throw lib.invalidArgType("id", "of type string", id);
        if (id === "") throw lib.nodeError(TypeErrorCtor, "ERR_INVALID_ARG_VALUE", "The argument 'id' must be a non-empty string. Received ''");
        const key = resolveSpecifier(id, mod.path, "require", mod.filename || undefined);
        if (starts(key, "node:")) return builtin(slice(key, 5));
        return loadCommonJs(key, mod, false, undefined).exports;
    }

    // The module of `key` (run now, unless in the cache). A module still
    // running (a require cycle) gives its exports so far, as in Node.
    function loadCommonJs(key, parent, isMain, text) {
        const cached = cache[key];
        if (cached !== undefined) return cached;
        if (text === undefined) text = readSource(key);
        const format = formatOf(key, text);
        if (format === "esm") {
            throw lib.nodeError(ErrorCtor, "ERR_REQUIRE_ESM", "require() of ES Module " + key + (parent !== null && parent.filename ? " from " + parent.filename : "") + " is not supported here: load it with import or import() instead");
        }
        if (requireDepth >= MAX_DEPTH) throw hidePreludeFrames(new RangeErrorCtor("require() nested too deep: more than " + MAX_DEPTH + " modules each requiring the next (at " + key + ")"));
        const m = new Module(key, parent);
        if (isMain) {
            m.id = ".";
            mainModule = m;
        }
        cache[key] = m;
        if (parent !== null && isArray(parent.children)) call(arrayPush, parent.children, m);
        requireDepth++;
        let done = false;
        try {
            if (format === "json") {
                m.exports = parseJsonText(text, key);
            } else {
                const wrapper = native.compile(WRAP + text + "\n})", key, false);
                call(wrapper, m.exports, m.exports, makeRequire(m), m, key, m.path);
            }
            done = true;
        } finally {
            requireDepth--;
            if (!done) delete cache[key];
        }
        m.loaded = true;
        return m;
    }

    function createRequire(filename) {
        let file = filename;
        if (file instanceof lib.URL || (typeof file === "string" && starts(file, "file:"))) file = lib.fileURLToPath(file);
        if (typeof file !== "string" || file[0] !== "/") {
            throw lib.nodeError(TypeErrorCtor, "ERR_INVALID_ARG_VALUE", "The argument 'filename' must be a file URL object, file URL string, or absolute path string. Received " + show(filename));
        }
        const m = new Module(call(endsWith, file, "/") ? file + "noop.js" : file, null);
        return makeRequire(m);
    }

    Module.createRequire = createRequire;
    Module.isBuiltin = (name) => typeof name === "string" && builtinName(name) !== null;
    Module._cache = cache;
    Module.wrap = (source) => WRAP + source + "\n});";
    Module._resolveFilename = (request, parent) => resolveSpecifier(request, parent ? parent.path : lib.cwd(), "require", undefined);
    Module._load = (request, parent) => requireFrom(parent || cellModule, request);
    Module.register = function () {};
    Module.Module = Module;
    lib.builtins.module = () => {
        Module.builtinModules = objectKeys(lib.builtins);
        return Module;
    };

    // `require` in cells: relative to process.cwd(), like Node's REPL.
    const cellModule = {
        get path() { return lib.cwd(); },
        filename: undefined,
        children: [],
    };
    lib.defineGlobal("require", makeRequire(cellModule));

    // ---- programs (node/main.js) ----

    let mainUrl = "";

    // `node FILE`: the main module's evaluation (a promise) for an ES
    // module; a CommonJS main runs at once.
    lib.runMain = function (file) {
        const key = resolveSpecifier(file, lib.cwd(), "require", undefined);
        if (starts(key, "node:")) throw notFound(file, undefined, "require");
        call(mapSet, depthOf, key, 0);
        mainUrl = lib.pathToFileURL(key).href;
        if (formatOf(key, undefined) === "esm") return native.evaluateModule(key);
        loadCommonJs(key, null, true, undefined);
        return undefined;
    };

    // `node -e CODE`, `node -p CODE`, `node -` (code from stdin): a script
    // (an ES module if it has import/export statements) with `require`,
    // `module`, `exports`, `__filename` and `__dirname` as globals.
    lib.runScript = function (code, name, print) {
        const file = path.join(lib.cwd(), name);
        const m = new Module(file, null);
        m.id = name;
        lib.defineGlobal("require", makeRequire(m));
        lib.defineGlobal("module", m);
        lib.defineGlobal("exports", m.exports);
        lib.defineGlobal("__filename", name);
        lib.defineGlobal("__dirname", ".");
        mainUrl = lib.pathToFileURL(file).href;
        if (!print && call(regexpTest, ESM_SYNTAX, code)) return native.evaluateModule(file, code);
        const evaluated = native.compile(code, name, true);
        if (!print) return evaluated;
        return call(promiseThen, evaluated, (completion) => {
            native.write(1, wellFormed(show(completion.value)));
        });
    };

    lib.unsettled = function () {
        return "Warning: Detected unsettled top-level await at " + mainUrl + "\n(the program awaited a promise that can never settle)";
    };
})
