# attack: import ctypes to call into native code
# why: there is no native code to call: CPython is a wasm component without _ctypes
# expect: error
# must-contain: ModuleNotFoundError
import ctypes
