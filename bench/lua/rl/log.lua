-- Sliding log in a sorted set, KEYS[1] the set, ARGV limit, period (ms);
-- time from TIME. Members are unique per request (time and a sequence).
local limit, period = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - period)
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], now, t[1] .. t[2] .. ':' .. redis.call('INCR', KEYS[1] .. ':seq'))
redis.call('PEXPIRE', KEYS[1], period)
return 1
