# attack: recurse until the stack breaks
# why: CPython keeps its frames on the heap, so the envelope's memory cap (or the recursion limit, or the capped wasm stack) ends it
# expect: error, trap, memory_exhausted, timeout
import sys
sys.setrecursionlimit(10**9)
def f(n):
    return f(n + 1) + 1
f(0)
