# attack: print without end to fill the host's memory or disk
# why: stdout is captured up to the envelope's cap; the run ends output_truncated
# expect: output_truncated, timeout
# limits: stdout_bytes=100000 wall_time_ms=5000
while True:
    print('y' * 1000)
