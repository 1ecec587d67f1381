-- Sliding window counter (the seed's two counters), KEYS[1] prefix, ARGV
-- limit, period (ms); time from TIME.
local limit, period = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local w = math.floor(now / period)
local cur = tonumber(redis.call('GET', KEYS[1] .. ':' .. w) or '0')
local prev = tonumber(redis.call('GET', KEYS[1] .. ':' .. (w - 1)) or '0')
local elapsed = now - w * period
if prev * (period - elapsed) + cur * period >= limit * period then return 0 end
redis.call('SET', KEYS[1] .. ':' .. w, cur + 1, 'PX', 2 * period)
return 1
