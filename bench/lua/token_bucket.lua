-- Token bucket for plain Redis, in the shape of seed 000 section 6: one hash
-- per bucket with the token count and the last refill time (HMGET, HSET,
-- PEXPIRE). The seed's version takes "now" from the caller; this one reads
-- the server clock with TIME, because redis-benchmark cannot send a clock.
--   EVALSHA <sha> 1 <key> <rate tokens/s> <burst> [<cost>]
--   -> {allowed, whole tokens left}
-- CL.THROTTLE key 15 30 60 corresponds to rate 0.5, burst 16, cost 1.
local rate  = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost  = tonumber(ARGV[3] or '1')

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local state  = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst       -- a new bucket is full
local last   = tonumber(state[2]) or now
tokens = math.min(burst, tokens + (now - last) * rate / 1000)

local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end

redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
-- keep the hash a little longer than a refill from empty takes
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, math.floor(tokens)}
