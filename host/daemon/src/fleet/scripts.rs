//! The fleet's checks as Lua scripts, each run atomically by Redis on its
//! own clock (`TIME`), so every node agrees on "now" and "today". Keys and
//! arguments are documented on each; [`super::shared`] runs them.

/// Redis's clock: `t` (seconds, microseconds) and `now` in ms.
macro_rules! lua_now {
    () => {
        "
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"
    };
}

/// `gcra(key, per_min)`: spends one request of the caller's rate; 0, or
/// the seconds to wait (nothing spent).
macro_rules! lua_gcra {
    () => {
        "
local function gcra(key, per_min)
  local interval = 60000 / per_min
  local burst = per_min * interval
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  local new_tat = tat + interval
  if new_tat - now > burst then
    return math.max(1, math.ceil((new_tat - burst - now) / 1000))
  end
  redis.call('SET', key, tostring(new_tat), 'PX', math.ceil(burst + 1000))
  return 0
end
"
    };
}

/// `admit(leases, per_day, max, id, ms, allowance)`: checks the daily
/// allowance (-1: none), then takes a lease under the cap; 0 leased, -1
/// at the cap, or the seconds until the allowance resets.
macro_rules! lua_admit {
    () => {
        "
local function admit(leases, per_day, max, id, ms, allowance)
  local day = math.floor(tonumber(t[1]) / 86400)
  if allowance >= 0 then
    local used = tonumber(redis.call('HGET', per_day, tostring(day)) or '0')
    if used >= allowance then
      return math.max(1, (day + 1) * 86400 - tonumber(t[1]))
    end
  end
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  if redis.call('ZCARD', leases) >= max then
    return -1
  end
  redis.call('ZADD', leases, now + ms, id)
  redis.call('PEXPIRE', leases, ms)
  return 0
end
"
    };
}

/// GCRA. KEYS[1] the caller's rate key; ARGV[1] requests per minute.
/// Returns 0 (admitted) or the seconds to wait.
pub(super) const RATE: &str = concat!(
    lua_now!(),
    lua_gcra!(),
    "return gcra(KEYS[1], tonumber(ARGV[1]))\n"
);

/// KEYS[1] the caller's leases (ZSET id → expiry), KEYS[2] its run time
/// per day (HASH day → ms). ARGV: max_concurrent, lease id, lease ms,
/// allowance ms (-1: none). Returns 0 (leased), -1 (at the cap), or the
/// seconds until the allowance resets.
pub(super) const ADMIT: &str = concat!(
    lua_now!(),
    lua_admit!(),
    "return admit(KEYS[1], KEYS[2], tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))\n"
);

/// RATE, then ADMIT, in one round trip (a run's call: the rate is spent
/// before its body is read, and its place taken with it). KEYS[1] rate,
/// KEYS[2] leases, KEYS[3] run time per day. ARGV: per minute,
/// max_concurrent, lease id, lease ms, allowance ms (-1: none). Returns
/// {0, 0} leased, {1, secs} rate limited, {2, 0} at the cap, {3, secs}
/// allowance spent.
pub(super) const RATE_ADMIT: &str = concat!(
    lua_now!(),
    lua_gcra!(),
    lua_admit!(),
    "
local wait = gcra(KEYS[1], tonumber(ARGV[1]))
if wait > 0 then return {1, wait} end
local a = admit(KEYS[2], KEYS[3], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]))
if a == 0 then return {0, 0} end
if a < 0 then return {2, 0} end
return {3, a}
"
);

/// KEYS[1] leases, KEYS[2] run time per day. ARGV: lease id, ms to charge.
pub(super) const SETTLE: &str = r#"
local t = redis.call('TIME')
local day = math.floor(tonumber(t[1]) / 86400)
redis.call('ZREM', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 then
  redis.call('HINCRBY', KEYS[2], tostring(day), tonumber(ARGV[2]))
  redis.call('EXPIRE', KEYS[2], 172800)
end
return 0
"#;

/// KEYS[1] the caller's sessions (ZSET fingerprint → expiry). ARGV: max,
/// member, ms. Returns 0 (placed) or -1 (at the cap).
pub(super) const SESSION_OPEN: &str = concat!(
    lua_now!(),
    r#"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return -1 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 0
"#
);

/// KEYS[1] a caller's sessions or leases. ARGV: ms, members…: renews
/// each member that is still there (one that expired stays gone).
pub(super) const SESSION_RENEW: &str = concat!(
    lua_now!(),
    r#"
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 0
"#
);

/// KEYS[1] the caller's leases, KEYS[2] run time, KEYS[3] sessions.
/// Returns {run ms today, leases live, sessions live}.
pub(super) const USAGE: &str = concat!(
    lua_now!(),
    r#"
local day = math.floor(tonumber(t[1]) / 86400)
local used = tonumber(redis.call('HGET', KEYS[2], tostring(day)) or '0')
return {used, redis.call('ZCOUNT', KEYS[1], now, '+inf'), redis.call('ZCOUNT', KEYS[3], now, '+inf')}
"#
);
