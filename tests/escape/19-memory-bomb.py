# attack: allocate far more memory than the envelope allows
# why: the instance's linear memory is capped by the envelope; growth past it fails
# expect: memory_exhausted, error
# limits: memory_bytes=67108864
s = 'x' * 10**10
