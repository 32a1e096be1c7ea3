# attack: spin forever
# why: fuel and the wall-time deadline interrupt the instance
# expect: timeout, cpu_exhausted
# limits: wall_time_ms=1000
while True:
    pass
