
# ---------------------------------------------------------------------------------------------
# Harnesses (appended to zygote.py): what G runs once it is locked down.
# `data`: the run's inputs by name ("code", "args", "setup", "sample", "item"). fd 0/1/2 are the
# stdin/stdout/stderr memfds, fd 3 the result memfd, fd 5 a compiled binary or assert test code.
import io, types, traceback, socket, base64, builtins

MAX_DEPTH = 200
PR_SET_CHILD_SUBREAPER = 36


def enc(x, depth=0):
    """Plain values only, checked by exact type: no subclass, no object with its own __eq__."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested deeper than %d" % MAX_DEPTH)
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        return x if x == x and x not in (float("inf"), float("-inf")) else {"$f": repr(x)}
    if t is list:
        return [enc(v, depth + 1) for v in x]
    if t is tuple:
        return {"$t": [enc(v, depth + 1) for v in x]}
    if t is dict:
        return {"$d": [[enc(k, depth + 1), enc(v, depth + 1)] for k, v in x.items()]}
    if t is set or t is frozenset:
        return {"$s": [enc(v, depth + 1) for v in x]}
    if t is bytes:
        return {"$b": base64.b64encode(x).decode()}
    if t is complex:
        return {"$c": [x.real, x.imag]}
    raise TypeError("returned a value of type %s, which is not a plain value" % safe_name(t))


def dec(x):
    """The inverse of enc, building fresh builtin objects (used by the assert harness)."""
    if isinstance(x, list):
        return [dec(v) for v in x]
    if isinstance(x, dict):
        (k, v), = x.items()
        if k == "$t":
            return tuple(dec(i) for i in v)
        if k == "$d":
            return {dec(a): dec(b) for a, b in v}
        if k == "$s":
            return set(dec(i) for i in v)
        if k == "$f":
            return float(v)
        if k == "$b":
            return base64.b64decode(v)
        if k == "$c":
            return complex(v[0], v[1])
        raise ValueError("bad tag %r" % k)
    return x


def safe_name(t):
    try:
        return str(type.__getattribute__(t, "__name__"))[:60]
    except BaseException:
        return "?"


def result(obj):
    data = json.dumps(obj).encode()
    while data:
        data = data[os.write(3, data):]


def error_text(e, full=False):
    """The end of an exception's text (with its traceback when `full`), never raising itself."""
    try:
        lines = traceback.format_exception(type(e), e, e.__traceback__) if full \
            else traceback.format_exception_only(type(e), e)
        return "".join(lines)[-2000:]
    except BaseException:
        return "an exception that cannot be printed"


def finish(out):
    """Flushes what the program printed, writes the result, and ends the run."""
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    result(out)
    os._exit(0)


def compile_user(src, name):
    pre = PRECOMPILED
    if pre is not None and pre[1] == name and pre[0] == src:
        return pre[2]
    try:
        return compile(src, name, "exec")
    except (SyntaxError, ValueError) as e:
        # One line, as Python says it: `SyntaxError: invalid syntax (solution.py, line 2)`.
        try:
            text = "%s: %s" % (safe_name(type(e)), e)
        except BaseException:
            text = error_text(e)
        result({"compile_error": text[:500]})
        os._exit(0)


def make_stdio():
    """Text streams on fds 0-2, made once in the zygote (which never uses them): each run,
    whose fds 0-2 are its own memfds by then, starts with them empty."""
    return (io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "rb", closefd=False)), encoding="utf-8", errors="replace"),
            io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "wb", closefd=False), 1 << 16), encoding="utf-8", errors="replace"),
            io.TextIOWrapper(io.FileIO(2, "wb", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True))


STDIO = None


def setup_stdio():
    sys.stdin, sys.stdout, sys.stderr = STDIO or make_stdio()
    sys.argv = ["solution.py"]


def fresh_module(name):
    mod = types.ModuleType(name)
    mod.__dict__["__builtins__"] = builtins
    sys.modules[name] = mod
    return mod


LOAD_ERROR = []


def load_error(e):
    """Why a module did not load, as Python said it, with where: `NameError: name 'List' is not
    defined (solution.py, line 2)`. Never raises."""
    try:
        text = error_text(e).strip().splitlines()[-1][:300]
        where = ""
        for fr in traceback.extract_tb(e.__traceback__):
            if fr.filename in ("solution.py", "prompt.py"):
                where = " (%s, line %d)" % (fr.filename, fr.lineno)
        return text + where
    except BaseException:
        return "an exception that cannot be printed"


def run_module(code, g):
    """Runs a module the way `python solution.py` would; returns its exit code. Why it failed,
    when it raised, is in LOAD_ERROR."""
    rc = 0
    try:
        exec(code, g)
    except SystemExit as e:
        c = e.code
        if c is None:
            rc = 0
        elif type(c) is int:
            rc = c & 0xFF
        else:
            try:
                sys.stderr.write(str(c) + "\n")
            except BaseException:
                pass
            rc = 1
    except BaseException as e:
        try:
            traceback.print_exc()
        except BaseException:
            pass
        LOAD_ERROR[:] = [load_error(e)]
        rc = 1
    # What the interpreter does at exit: wait for non-daemon threads (the "run main in a thread
    # with a big stack" idiom), then run atexit handlers (some fast-I/O idioms print there).
    try:
        t = sys.modules.get("threading")
        if t is not None:
            t._shutdown()
        a = sys.modules.get("atexit")
        if a is not None:
            a._run_exitfuncs()
    except SystemExit as e:
        rc = e.code if type(e.code) is int else (0 if e.code is None else 1)
    except BaseException:
        rc = rc or 1
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            rc = rc or 1
    return rc


def h_stdio(req, data):
    code = compile_user(data["code"], "solution.py")
    setup_stdio()
    os._exit(run_module(code, fresh_module("__main__").__dict__))


def find_entry(g, name):
    f = g.get(name)
    if f is not None and callable(f):
        return f
    cls = g.get("Solution")
    if cls is not None and hasattr(cls, name):
        return getattr(cls(), name)
    raise NameError("the solution defines no function or Solution method named %r" % name)


def h_call(req, data):
    code = compile_user(data["code"], "solution.py")
    setup_stdio()
    g = fresh_module("solution").__dict__
    args = json.loads(data["args"])
    rc = run_module(code, g)
    if rc != 0:
        os._exit(rc)
    try:
        f = find_entry(g, req["entry_point"])
        if isinstance(args, dict):
            value = f(*args.get("args", []), **args.get("kwargs", {}))
        else:
            value = f(*args)
        out = {"value": enc(value)}
    except SystemExit:
        out = {"error": "the solution exited inside the call"}
    except BaseException as e:
        out = {"error": error_text(e)}
    finish(out)


def h_assert(req, data):
    """Test code runs here in G; the solution runs in its own process S. Calls cross as plain
    values, so the tests compare builtins the solution never made, and S cannot reach the
    verdict: it holds no handle on fd 3, cannot signal PID 1 and cannot read G's memory. The
    test code (fd 5) and setup code (fd 6) are read only after S is forked, so S's memory never
    held them."""
    code = compile_user(data["code"], "solution.py")
    a, b = socket.socketpair()
    s = os.fork()
    if s == 0:
        a.close()
        os.close(3)
        os.close(5)
        os.close(6)
        solver(code, b)
    b.close()
    try:
        setup = compile(read_fd(6).decode("utf-8", "replace"), "setup.py", "exec")
        test = compile(read_fd(5).decode("utf-8", "replace"), "test.py", "exec")
    except (SyntaxError, ValueError) as e:
        # The dataset's test code is broken: nobody can score this, and it is not the policy's fault.
        os.kill(s, signal.SIGKILL)
        result({"bad_tests": error_text(e)})
        os._exit(0)
    os.close(5)
    os.close(6)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    rf = a.makefile("rb")
    end = []

    def solver_end():
        # S closed its end: it is exiting (or chose to stop answering). Give it a moment to
        # become reapable so a CPU-limit kill is reported as the timeout it is.
        if not end:
            pid, st = 0, 0
            for _ in range(200):
                try:
                    pid, st = os.waitpid(s, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid:
                    break
                time.sleep(0.001)
            if pid and os.WIFSIGNALED(st) and os.WTERMSIG(st) in (signal.SIGXCPU, signal.SIGKILL):
                end.append("timeout")
            elif pid:
                end.append("exited")
        return end[0] if end else ""

    def recv():
        line = rf.readline(1 << 26)
        if not line:
            why = solver_end()
            raise RuntimeError("the solution process ended before answering" + (" (%s)" % why if why else ""))
        return json.loads(line)

    def send(obj):
        a.sendall(json.dumps(obj).encode() + b"\n")

    def proxy(name):
        def call(*args, **kwargs):
            send({"call": name, "args": enc(list(args)), "kwargs": enc(kwargs)})
            r = recv()
            if "value" in r:
                return dec(r["value"])
            kind, msg = r["raise"]
            exc = getattr(builtins, kind, None)
            # StopIteration would end an enclosing map() or generator as if it were exhausted:
            # a call that raises it fails the way any other exception does.
            if isinstance(exc, type) and issubclass(exc, Exception) \
                    and not issubclass(exc, (StopIteration, StopAsyncIteration)):
                raise exc(msg)
            raise RuntimeError("%s: %s" % (kind, msg))
        call.__name__ = name
        return call

    out = None
    try:
        hello = recv()
        if "error" in hello:
            raise RuntimeError("the solution failed to load: " + str(hello["error"]))
        ns = {"__name__": "__test__", "__builtins__": builtins}
        # The solution's functions, as proxies, but never under a builtin's name: a solution
        # that defines `abs` or `set` must not change what the tests' own calls do.
        for name in hello["names"]:
            if type(name) is not str or name.startswith("__"):
                continue
            if name == req.get("entry_point") or not hasattr(builtins, name):
                ns[name] = proxy(name)
        if req.get("entry_point"):
            ns.setdefault(req["entry_point"], proxy(req["entry_point"]))
        exec(setup, ns)
        exec(test, ns)
        if req.get("check"):
            check_fn = ns.get(req["check"])
            if not callable(check_fn):
                out = {"bad_tests": "the test code defines no `%s` function" % req["check"]}
            else:
                check_fn(proxy(req["entry_point"]))
        if out is None:
            out = {"passed": True}
    except BaseException as e:
        out = {"passed": False, "error": error_text(e)}
        # A CPU-limit kill of S shows up as S's end of the socket closing, and recv() has then
        # already looked at how S ended. Any other failure (a failed assert) leaves S alive and
        # waiting: polling for its end would only add 200 ms to every failing sample.
        if end and end[0] == "timeout":
            out["timeout"] = True
    result(out)
    os._exit(0)


def solver(code, sock):
    setup_stdio()
    wf = sock.makefile("wb")
    rf = sock.makefile("rb")

    def send(obj):
        wf.write(json.dumps(obj).encode() + b"\n")
        wf.flush()

    g = fresh_module("solution").__dict__
    rc = run_module(code, g)
    if rc != 0:
        send({"error": LOAD_ERROR[0] if LOAD_ERROR else "exit code %d" % rc})
        os._exit(rc)
    names = [k for k, v in list(g.items()) if not k.startswith("__") and type(v) is types.FunctionType]
    if "Solution" in g and isinstance(g["Solution"], type):
        for k in dir(g["Solution"]):
            if not k.startswith("_") and k not in names:
                names.append(k)
    send({"names": names})
    while True:
        line = rf.readline()
        if not line:
            os._exit(0)
        req = json.loads(line)
        try:
            f = find_entry(g, req["call"])
            value = f(*dec(req["args"]), **dec(req["kwargs"]))
            send({"value": enc(value)})
        except SystemExit:
            os._exit(1)
        except BaseException as e:
            try:
                send({"raise": [safe_name(type(e)), str(e)[:2000]]})
            except BaseException:
                send({"raise": ["Exception", "unprintable"]})


# What a python grader's referee_run runs: the code arrives on fd 3 of the fresh interpreter
# (its own descriptor; the grader's result channel is never passed on).
RUN_BOOT = ("import os, sys\n"
            "f = os.fdopen(3, 'rb')\nsrc = f.read()\nf.close()\n"
            "sys.argv = ['solution.py']\n"
            "exec(compile(src, 'solution.py', 'exec'), {'__name__': '__main__', '__builtins__': __builtins__})\n")


def memfd_of(data, name):
    fd = os.memfd_create(name)
    off = 0
    while off < len(data):
        off += os.write(fd, data[off:])
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def referee_run(code, stdin="", timeout=10.0):
    """For a python grader that runs the model's code: the code runs in a fresh interpreter
    (a new process image, so none of the grader's memory: not the item, not the grader's
    source), holding only its own stdin, stdout and stderr, for at most `timeout` seconds; then
    everything it started is killed. It cannot reach the grader's result, which the grader
    returns as usual. Returns {"exit_code", "signal", "timed_out", "output_limit", "stdout",
    "stderr"} (stdout up to 1 MiB, stderr its last 4 KiB)."""
    if type(code) is not str or type(stdin) is not str:
        raise TypeError("referee_run(code, stdin) takes strings")
    if type(timeout) not in (int, float) or not 0 < timeout <= 600:
        raise ValueError("referee_run's timeout is in seconds, in (0, 600]")
    fin = memfd_of(stdin.encode(), "stdin")
    fsrc = memfd_of(code.encode(), "code")
    fout = os.memfd_create("stdout")
    ferr = os.memfd_create("stderr")
    exe = sys.executable
    s = os.fork()
    if s == 0:
        try:
            for i, fd in enumerate((fin, fout, ferr, fsrc)):
                os.dup2(fd, 200 + i)
            for i in range(4):
                os.dup2(200 + i, i)
            os.closerange(4, 1024)
            os.execve(exe, [exe, "-I", "-S", "-c", RUN_BOOT], dict(os.environ))
        finally:
            os._exit(127)
    for fd in (fin, fsrc):
        os.close(fd)
    st, _, timed_out, _ = wait_and_reap(s, int(timeout * 1000))
    out = ending(st, timed_out)
    out["stdout"] = os.pread(fout, 1 << 20, 0).decode("utf-8", "replace")
    size = os.fstat(ferr).st_size
    out["stderr"] = os.pread(ferr, 4096, max(0, size - 4096)).decode("utf-8", "replace")
    os.close(fout)
    os.close(ferr)
    return out


def h_grade(req, data):
    """OpenAI's python grader: grade(sample, item) -> float, the grader's own code. A grader
    that runs the model's code gets `referee_run` for it (see there)."""
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    code = compile_user(data["code"], "grader.py")
    setup_stdio()
    g = fresh_module("grader").__dict__
    g["referee_run"] = referee_run
    rc = run_module(code, g)
    if rc != 0:
        result({"error": "the grader module exited with %d while loading" % rc})
        os._exit(0)
    try:
        v = g["grade"](json.loads(data["sample"]), json.loads(data["item"]))
        if type(v) is bool or type(v) not in (int, float):
            out = {"error": "grade returned %s, not a number" % safe_name(type(v))}
        else:
            out = {"value": float(v)}
    except BaseException as e:
        out = {"error": error_text(e, full=True)}
    finish(out)


def h_exec(req, data):
    """A compiled program: executed from its sealed memfd (fd 5), so no path to it exists."""
    os.set_inheritable(5, False)
    os.execve(5, ["solution"], dict(os.environ))


def h_compile(req, data):
    with open(req["file"], "wb") as f:
        f.write(data["code"])
    argv = req["argv"]
    pid = os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=[(os.POSIX_SPAWN_DUP2, 2, 1)])
    _, st = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(st)
    if rc == 0:
        with open(req["output"], "rb") as f:
            data = f.read()
        while data:
            data = data[os.write(3, data):]
        os._exit(0)
    os._exit(rc if rc > 0 else 1)


REPORT_MAX = 1 << 16  # the end of what a verifier prints that is kept: its report is the last line


def put_result(obj):
    """The result channel, rewritten from the start: nothing written there before counts."""
    data = json.dumps(obj).encode()
    os.ftruncate(3, 0)
    off = 0
    while off < len(data):
        off += os.pwrite(3, data[off:], off)


def wait_and_reap(s, wall_ms):
    """Waits for process `s` (killing it at `wall_ms`, when given), then kills and reaps every
    process left in the namespace but its init and this one. Returns (status, rusage,
    timed_out, wall ms)."""
    start = time.monotonic()
    deadline = start + wall_ms / 1000.0 if wall_ms else None
    timed_out, delay, st, ru = False, 0.0002, 0, None
    # A pidfd wakes this process the moment the program ends; without one (an old kernel, a
    # filter that refuses it), poll with a growing sleep.
    try:
        pfd = os.pidfd_open(s)
    except (AttributeError, OSError):
        pfd = None
    while True:
        pid, st, ru = os.wait4(s, os.WNOHANG)
        if pid:
            break
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            os.kill(s, signal.SIGKILL)
            _, st, ru = os.wait4(s, 0)
            timed_out = True
            break
        if pfd is not None:
            try:
                select.select([pfd], [], [], left)
            except InterruptedError:
                pass
        else:
            time.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, 0.005)
    if pfd is not None:
        os.close(pfd)
    wall = (time.monotonic() - start) * 1000.0
    # Whatever the program started is killed and reaped: kill(-1) reaches every process of the
    # namespace but its init and this one, and as subreaper this one inherits the orphans.
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    return st, ru, timed_out, wall


def ending(st, timed_out):
    """How a process ended, from its wait status."""
    out = {"exit_code": None, "signal": None, "timed_out": timed_out, "output_limit": False}
    if os.WIFEXITED(st):
        out["exit_code"] = os.WEXITSTATUS(st)
    elif os.WIFSIGNALED(st):
        sig = os.WTERMSIG(st)
        out["signal"] = sig
        if sig == signal.SIGXCPU:
            out["timed_out"] = True
        if sig == signal.SIGXFSZ:
            out["output_limit"] = True
    return out


def run_program(code, wall_ms):
    """Runs the policy's program in a process of its own (fds 0-2 as given; no result channel,
    no verifier, no input), for at most `wall_ms`, then kills everything it left behind. Returns
    how it ended. G is not dumpable and is the subreaper of whatever the program starts, so the
    program cannot open G's descriptors through /proc, and every process it made is reaped,
    that is dead, before anything trusted runs."""
    s = os.fork()
    if s == 0:
        for fd in (3, 5, 6):
            os.close(fd)
        setup_stdio()
        os._exit(run_module(code, fresh_module("__main__").__dict__))
    st, ru, timed_out, wall = wait_and_reap(s, wall_ms)
    out = ending(st, timed_out)
    out["cpu_ms"] = round((ru.ru_utime + ru.ru_stime) * 1000.0, 3) if ru else None
    out["wall_ms"] = round(wall, 3)
    try:
        out["stdout"] = read_fd(1).decode("utf-8", "replace")
    except OSError:
        out["stdout"] = ""
    return out


def h_measure(req, data):
    """A measured verifier. The program (the policy's code) runs first in its own process; the
    verifier (the spec author's code, trusted) and its input (the item, read from fd 6) are read
    only after the program and everything it started have died, so the program never held them
    and cannot reach what the verifier prints: the verifier's stdout is a memfd made afterwards,
    copied from here to the result channel, which the program never held either."""
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    program = None
    if req.get("program"):
        code = compile_user(data["code"], "solution.py")
        program = run_program(code, int(req.get("program_wall_ms") or 0))
        failed = program["timed_out"] or program["output_limit"] or program["exit_code"] != 0
        if failed and req.get("must_succeed"):
            put_result({"program": program})
            os._exit(0)
    src = read_fd(5).decode("utf-8", "replace")
    try:
        inp = json.loads(read_fd(6))
    except ValueError as e:
        put_result({"program": program, "verifier_error": "bad input: %s" % e})
        os._exit(0)
    inp["program"] = program
    os.close(5)
    os.close(6)
    # The verifier reads its input on stdin and prints its report on a stdout nothing else held.
    fd = memfd_of(json.dumps(inp).encode(), "verifier-input")
    os.dup2(fd, 0)
    os.close(fd)
    fd = os.memfd_create("report")
    os.dup2(fd, 1)
    os.close(fd)
    # The working directory holds what the program wrote: data for the verifier, never code.
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and not p.startswith("/tmp")]
    put_result({"program": program, "phase": "verifier"})
    try:
        vcode = compile(src, "verifier.py", "exec")
    except (SyntaxError, ValueError) as e:
        put_result({"program": program, "verifier_error": error_text(e).strip()[-500:]})
        os._exit(0)
    setup_stdio()
    sys.argv = ["verifier.py"]
    del LOAD_ERROR[:]
    rc = run_module(vcode, fresh_module("__main__").__dict__)
    try:
        report = read_fd(1)[-REPORT_MAX:].decode("utf-8", "replace")
    except OSError:
        report = ""
    out = {"program": program, "report": report}
    if rc != 0:
        out["verifier_error"] = LOAD_ERROR[0] if LOAD_ERROR else "the verifier exited with %d" % rc
    put_result(out)
    os._exit(0)


HARNESS.update({"stdio": h_stdio, "call": h_call, "assert": h_assert, "grade": h_grade,
                "exec": h_exec, "compile": h_compile, "measure": h_measure})
