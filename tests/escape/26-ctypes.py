# attack: load libc through ctypes and call system()
# why: there is no native code to call: the small guest's CPython has no _ctypes, and the scientific guest's ctypes has no dynamic loader in wasm
# expect: error
# must-contain: Error
# must-not-contain: uid=
import ctypes
libc = ctypes.CDLL("libc.so.6")
libc.system(b"id")
