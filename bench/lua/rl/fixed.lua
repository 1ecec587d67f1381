-- Fixed window, as commonly written for Redis: KEYS[1] prefix, ARGV limit,
-- period (ms). Time from the server (TIME). Returns 1 allowed, 0 denied.
local limit, period = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local w = math.floor(now / period)
local k = KEYS[1] .. ':' .. w
local n = tonumber(redis.call('GET', k) or '0')
if n + 1 > limit then return 0 end
redis.call('SET', k, n + 1, 'PX', period)
return 1
