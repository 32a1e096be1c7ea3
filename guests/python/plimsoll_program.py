"""`python3 ARGS` as the shell guest starts it (issue #36).

The host runs a fresh instance of this guest for each `python3` (or
`python`) a shell command names, and calls `main` with the invocation as
JSON: `{"args": [...], "cwd": "/work/...", "env": {...}}`. `main` sets up
`sys.argv`, the environment and the working directory, runs `-c CODE`,
`-m MODULE`, a file or stdin as CPython's command line would, and returns
the exit status (SystemExit honoured, a traceback without this module's
frames on an uncaught exception).

app.py imports it at build time, so it is compiled into the snapshot and
costs nothing per run; the host (host/src/executor/child.rs) includes this
same file as the fallback it compiles in a guest built without it.
"""


def main(spec):
    import builtins, json, os, runpy, sys, traceback
    here = sys._getframe().f_code.co_filename
    spec = json.loads(spec)
    args = spec["args"]
    os.environ.clear()
    os.environ.update(spec["env"])
    try:
        os.chdir(spec["cwd"])
    except OSError as e:
        sys.stderr.write("python3: can't enter %s: %s\n" % (spec["cwd"], e.strerror))
        return 2
    mode, target, rest, i = None, None, [], 0
    while i < len(args):
        a = args[i]
        if a in ("-c", "-m"):
            if i + 1 >= len(args):
                sys.stderr.write("Argument expected for the %s option\n" % a)
                return 2
            mode, target, rest = a[1], args[i + 1], args[i + 2:]
            break
        if a.startswith("-c") or a.startswith("-m"):
            mode, target, rest = a[1], a[2:], args[i + 1:]
            break
        if a == "-":
            mode, rest = "stdin", args[i:]
            break
        if a in ("-V", "--version"):
            print("Python %d.%d.%d" % sys.version_info[:3])
            return 0
        if a in ("-h", "--help"):
            print("usage: python3 [option] ... [-c cmd | -m mod | file | -] [arg] ...")
            return 0
        if a in ("-W", "-X"):
            i += 2
            continue
        if a == "--":
            i += 1
            if i < len(args):
                mode, target, rest = "file", args[i], args[i + 1:]
            break
        if a.startswith("-") and len(a) > 1:
            if all(ch in "uBIEsSObdqiRv" for ch in a[1:]):
                i += 1
                continue
            sys.stderr.write("Unknown option: %s\n" % a)
            return 2
        mode, target, rest = "file", a, args[i + 1:]
        break
    if mode is None:
        mode, rest = "stdin", []
    main = {"__name__": "__main__", "__builtins__": builtins}
    rc = 0
    try:
        if mode == "file":
            path = os.path.abspath(target)
            if not os.path.exists(path):
                sys.stderr.write("python3: can't open file %r: [Errno 2] No such file or directory\n" % path)
                return 2
            sys.argv[:] = [target] + rest
            sys.path.insert(0, os.path.dirname(path))
            runpy.run_path(target, run_name="__main__")
        elif mode == "c":
            sys.argv[:] = ["-c"] + rest
            sys.path.insert(0, "")
            exec(compile(target, "<string>", "exec"), main)
        elif mode == "m":
            if target in ("pip", "pip3", "ensurepip"):
                sys.stderr.write("python3: No module named %s (packages are fixed: nothing can be installed)\n" % target)
                return 1
            sys.argv[:] = [target] + rest
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            source = sys.stdin.read()
            sys.argv[:] = rest if rest else [""]
            sys.path.insert(0, "")
            exec(compile(source, "<stdin>", "exec"), main)
    except SystemExit as e:
        code = e.code
        if code is None:
            rc = 0
        elif isinstance(code, int):
            rc = code & 0xFF
        else:
            try:
                sys.stdout.flush()
            except BaseException:
                pass
            sys.stderr.write("%s\n" % (code,))
            rc = 1
    except BaseException as e:
        tb = e.__traceback__
        runpy_file = getattr(runpy, "__file__", None) or "<frozen runpy>"
        # This function's own frames, the host's cell that called it and
        # runpy's are not the program's: the traceback starts at its code.
        ours = (here, runpy_file, "<frozen runpy>")
        while tb is not None and (
            tb.tb_frame.f_code.co_filename.startswith("<cell-")
            or tb.tb_frame.f_code.co_filename in ours
        ):
            tb = tb.tb_next
        try:
            sys.stdout.flush()
        except BaseException:
            pass
        traceback.print_exception(type(e), e, tb)
        rc = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    return rc