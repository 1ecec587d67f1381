-- GCRA rate limiter for plain Redis: the "Redis plus Lua" setup that
-- Turnstile's CL.THROTTLE replaces. Same arguments and reply as redis-cell:
--   EVALSHA <sha> 1 <key> <max_burst> <count> <period seconds> [<quantity>]
--   -> {limited, limit, remaining, retry_after_s, reset_after_s}
-- The key holds the theoretical arrival time (TAT) in Unix nanoseconds, as
-- a decimal string, and expires when the bucket is full again.
-- Lua numbers are doubles (integers exact up to 2^53), and Unix time in ns
-- is not, so the arithmetic runs in microseconds.
local max_burst = tonumber(ARGV[1])
local count     = tonumber(ARGV[2])
local period    = tonumber(ARGV[3])
local quantity  = tonumber(ARGV[4] or '1')

local clock = redis.call('TIME')                 -- {seconds, microseconds}
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

local interval = period * 1000000 / count        -- emission interval (us)
local limit    = max_burst + 1
local tau      = interval * limit                -- delay variation tolerance
local cost     = interval * quantity

local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then
  tat = math.max(now, math.floor(tonumber(stored) / 1000))
end

local new_tat  = tat + cost
local allow_at = new_tat - tau
local limited, retry_after, reset_after
if now < allow_at then
  limited = 1
  retry_after = -1                               -- "can never succeed"
  if cost <= tau then retry_after = allow_at - now end
  reset_after = tat - now                        -- nothing is written
else
  limited = 0
  retry_after = -1
  reset_after = new_tat - now
  redis.call('SET', KEYS[1], string.format('%d000', new_tat),
             'PX', math.max(1, math.floor(reset_after / 1000)))
end

local remaining = 0
local left = tau - reset_after
if left > 0 then remaining = math.floor(left / interval) end

-- whole seconds, plus one when at least a millisecond is left over
local function secs(us)
  if us < 0 then return -1 end
  local s = math.floor(us / 1000000)
  if us - s * 1000000 >= 1000 then s = s + 1 end
  return s
end

return {limited, limit, remaining, secs(retry_after), secs(reset_after)}
