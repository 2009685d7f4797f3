// The Python half of the sandbox: run inside Pyodide once per worker, it returns `run`, which executes
// one untrusted program per call after putting the interpreter back into its boot state. The guards
// here (blocked imports, os process functions, an interruptible time.sleep) are the first layer; the
// worker's JavaScript hardening (worker.ts) is the second, the worker boundary the last.

export const HARNESS_PY = String.raw`
import builtins, io, json, os, posix, shutil, signal, sys, time, types
import gc as _gc

# LiveCodeBench (and DeepCoder's grader) execute every program after these imports; programs rely on them.
_PRELUDE = compile("""
from string import *
from re import *
from datetime import *
from collections import *
from heapq import *
from bisect import *
from copy import *
from math import *
from random import *
from statistics import *
from itertools import *
from functools import *
from operator import *
from typing import *
import string, re, datetime, collections, heapq, bisect, copy, math, random, statistics, itertools, functools, operator, sys, json
""", '<prelude>', 'exec')
exec(_PRELUDE, {})  # imports them once, so they are part of the boot state

# Modules that reach JavaScript, the network, processes or raw memory.
_BLOCKED = frozenset('''js pyodide pyodide_js _pyodide _pyodide_core micropip pyodide_http ctypes _ctypes
    socket _socket ssl _ssl subprocess _posixsubprocess multiprocessing _multiprocessing asyncio _asyncio
    webbrowser'''.split())
_DENIED_OS = ('system', 'popen', 'fork', 'forkpty', 'kill', 'killpg', 'execv', 'execve', 'execl', 'execle',
    'execlp', 'execlpe', 'execvp', 'execvpe', 'spawnl', 'spawnle', 'spawnlp', 'spawnlpe', 'spawnv', 'spawnve',
    'spawnvp', 'spawnvpe', 'posix_spawn', 'posix_spawnp', 'mount')
_WORK = '/sandbox'
_dumps, _loads = json.dumps, json.loads  # programs may replace the json module's functions
_blocked_hits = []  # blocked operations the current program attempted

def _blocked_name(name):
    return name.partition('.')[0] in _BLOCKED

def _deny(what):
    def denied(*args, **kwargs):
        _blocked_hits.append(what)
        raise PermissionError(what + ' is not allowed in the sandbox')
    return denied

class _ImportBlocker:
    def find_spec(self, name, path=None, target=None):
        if _blocked_name(name):
            _blocked_hits.append('import ' + name)
            raise ImportError("module '" + name + "' is not available in the sandbox", name=name)
        return None

def _exit(code=0):
    raise SystemExit(code)

_original_sleep = time.sleep
def _sleep(seconds):
    # Pyodide's time.sleep ignores the interrupt buffer; short slices let a timeout interrupt it.
    seconds = float(seconds)
    if seconds < 0:
        raise ValueError('sleep length must be non-negative')
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        _original_sleep(min(left, 0.02))

def _gc_stub():
    # gc.get_objects / get_referrers would let a program walk to the interpreter's hidden objects.
    m = types.ModuleType('gc')
    for name in ('enable', 'disable', 'isenabled', 'collect', 'get_threshold', 'set_threshold', 'get_count', 'freeze', 'unfreeze'):
        if hasattr(_gc, name):
            setattr(m, name, getattr(_gc, name))
    return m

def _refers_to_blocked(module):
    try:
        values = list(vars(module).values())
    except TypeError:
        return False
    for v in values:
        name = v.__name__ if isinstance(v, types.ModuleType) else getattr(v, '__module__', None)
        if isinstance(name, str) and _blocked_name(name):
            return True
    return False

def _purge_blocked_modules():
    changed = True
    while changed:
        changed = False
        for name, module in list(sys.modules.items()):
            if name in ('sys', 'builtins'):
                continue
            if _blocked_name(name) or (module is not None and _refers_to_blocked(module)):
                del sys.modules[name]
                changed = True

def _install_guards():
    for module in (os, posix):
        for name in _DENIED_OS:
            if hasattr(module, name):
                setattr(module, name, _deny('os.' + name))
        module._exit = _exit
    time.sleep = _sleep

def _fs_entries():
    entries = {}
    for root, dirs, files in os.walk('/'):
        if root == '/':
            dirs[:] = [d for d in dirs if d not in ('proc', 'dev')]
        for name in dirs + files:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            # Directories count by existence: their mtimes change whenever a program uses them.
            entries[path] = None if name in dirs else (st.st_size, st.st_mtime)
    return entries

def _restore_fs():
    # Removes what the last program created; reports whether it changed a boot-time file.
    os.chdir('/')
    changed = False
    now = _fs_entries()
    for path in sorted(now, key=len, reverse=True):
        if path not in _SNAP_FS:
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                changed = True
        elif now[path] != _SNAP_FS[path]:
            changed = True
    os.makedirs(_WORK, exist_ok=True)
    os.chdir(_WORK)
    return changed or any(p not in now for p in _SNAP_FS)

sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith('_pyodide')]
sys.meta_path.insert(0, _ImportBlocker())
_purge_blocked_modules()
sys.modules['gc'] = _gc_stub()
_install_guards()
os.makedirs(_WORK, exist_ok=True)
_SNAP_MODULES = dict(sys.modules)
_SNAP_BUILTINS = dict(builtins.__dict__)
_SNAP_META_PATH = list(sys.meta_path)
_SNAP_PATH = list(sys.path)
_SNAP_PATH_HOOKS = list(sys.path_hooks)
_SNAP_ENV = dict(os.environ)
_SNAP_FS = _fs_entries()
_RECURSION_LIMIT = sys.getrecursionlimit()
_INT_DIGITS = sys.get_int_max_str_digits()
_STREAMS = (sys.stdin, sys.stdout, sys.stderr)

def _ignore_signal(signum, frame):
    pass

def _drain_interrupt():
    # An interrupt that landed after the previous program finished must not hit this one.
    signal.signal(signal.SIGINT, _ignore_signal)
    for _ in range(256):
        pass
    signal.signal(signal.SIGINT, signal.default_int_handler)

def _reset():
    sys.settrace(None)
    sys.setprofile(None)
    _drain_interrupt()
    modules = sys.modules
    for name in [n for n in modules if n not in _SNAP_MODULES]:
        del modules[name]
    modules.update(_SNAP_MODULES)
    bd = builtins.__dict__
    for name in [n for n in bd if n not in _SNAP_BUILTINS]:
        del bd[name]
    bd.update(_SNAP_BUILTINS)
    sys.meta_path[:] = _SNAP_META_PATH
    sys.path[:] = _SNAP_PATH
    sys.path_hooks[:] = _SNAP_PATH_HOOKS
    sys.path_importer_cache.clear()
    sys.setrecursionlimit(_RECURSION_LIMIT)
    sys.set_int_max_str_digits(_INT_DIGITS)
    sys.argv = ['solution.py']
    os.environ.clear()
    os.environ.update(_SNAP_ENV)
    _install_guards()
    _gc.enable()
    return _restore_fs()

def _reopen_std_fds():
    # A program may close fd 0, 1 or 2 (open(0) closes it when collected); the devices are still there.
    for fd, path, flags in ((0, '/dev/stdin', os.O_RDONLY), (1, '/dev/stdout', os.O_WRONLY), (2, '/dev/stderr', os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            new = os.open(path, flags)
            if new != fd:
                os.dup2(new, fd)
                os.close(new)

def _streams():
    _reopen_std_fds()
    stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, 'r', closefd=False)), encoding='utf-8', errors='replace')
    stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, 'w', closefd=False), 1 << 16), encoding='utf-8', errors='replace', newline='\n')
    stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, 'w', closefd=False), 1 << 12), encoding='utf-8', errors='replace', newline='\n')
    return stdin, stdout, stderr

def _describe(e):
    line = e.lineno if isinstance(e, SyntaxError) else None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == '<solution>':
            line = tb.tb_lineno
        tb = tb.tb_next
    try:
        message = str(e)
    except BaseException:
        message = '<unprintable>'
    text = type(e).__name__ + (': ' + message if message else '')
    if line is not None and not isinstance(e, SyntaxError):
        text += ' (line ' + str(line) + ')'
    return text[:500]

def _find_callable(ns, name):
    solution = ns.get('Solution')
    if isinstance(solution, type) and hasattr(solution, name):
        return getattr(solution(), name)
    fn = ns.get(name)
    if callable(fn):
        return fn
    raise NameError("the program defines no function '" + name + "' (nor a method Solution." + name + ")")

def run(code, mode, args_json, fn_name):
    """mode 'stdin': run the program as __main__; mode 'call': then call fn_name(*json.loads(args_json))."""
    try:
        _reset()
        del _blocked_hits[:]
        stdin, stdout, stderr = _streams()
    except BaseException as e:
        return _dumps({'status': 'error', 'error': 'sandbox reset failed: ' + _describe(e), 'value': None, 'blocked': [], 'tainted': True})
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    main = types.ModuleType('__main__')
    main.__builtins__ = builtins
    sys.modules['__main__'] = main
    ns = main.__dict__
    status, error, value = 'ok', None, None
    try:
        try:
            exec(_PRELUDE, ns)
            exec(compile(code, '<solution>', 'exec'), ns)
            if mode == 'call':
                result = _find_callable(ns, fn_name)(*_loads(args_json))
                try:
                    value = _dumps(result, allow_nan=False)
                except (TypeError, ValueError) as e:
                    raise TypeError('the result is not JSON-serializable: ' + type(result).__name__) from None
        except SystemExit as e:
            if e.code not in (None, 0):
                status, error = 'error', 'SystemExit: ' + str(e.code)[:200]
            elif mode == 'call' and value is None:
                status, error = 'error', 'the program exited before returning a value'
        except KeyboardInterrupt:
            status = 'timeout'
        except MemoryError:
            status, error = 'memory', 'MemoryError'
        except BaseException as e:
            status, error = 'error', _describe(e)
        finally:
            for stream in (stdout, stderr):
                try:
                    stream.flush()
                except BaseException:
                    pass
            sys.stdin, sys.stdout, sys.stderr = _STREAMS
            if '__main__' in _SNAP_MODULES:
                sys.modules['__main__'] = _SNAP_MODULES['__main__']
            else:
                sys.modules.pop('__main__', None)
            ns.clear()
            del main, ns
            _gc.collect()
    except KeyboardInterrupt:
        status = 'timeout'
    tainted = _restore_fs()
    return _dumps({'status': status, 'error': error, 'value': value, 'blocked': _blocked_hits[:8], 'tainted': tainted})

run
`;
