/**
 * The Lua scripts of `RedisChannelLeases` (see its header for the key layout, the fence and the
 * queue), and their replies read as values. Each is one atomic step inside Redis.
 */
import { type ChannelLeaseLoss, InvariantError } from '@ebb/core';

/**
 * KEYS: lease, fence, queue, deadlines; ARGV: token, TTL ms, fence TTL ms. A head waiter without a
 * drop time (one of the two sets lost on its own: a cleanup, or evicted under a volatile-* policy)
 * counts as dead too, so the queue never sticks.
 * Returns {1, fence} (a string: Lua would print a double of 16 digits as 1.8e+15) when the caller
 * took the lease; {0, ms} when it waits: until the holder's expiry, or the head waiter's drop time
 * when the lease is free but another waiter's turn (-1: unknown).
 */
export const ACQUIRE = `
local token, ttl = ARGV[1], tonumber(ARGV[2])
local function str(n) return string.format('%.0f', n) end
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. str(nowMs))) do
  redis.call('ZREM', KEYS[3], gone)
  redis.call('ZREM', KEYS[4], gone)
end
local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
while head and not redis.call('ZSCORE', KEYS[4], head) do
  redis.call('ZREM', KEYS[3], head)
  head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl == -2 and (head == nil or head == token) then
  local last = tonumber(redis.call('GET', KEYS[2])) or 0
  local fence = str(math.max(last + 1, tonumber(time[1]) * 1000000 + tonumber(time[2])))
  redis.call('SET', KEYS[1], token .. ':' .. fence, 'PX', ARGV[2])
  redis.call('SET', KEYS[2], fence, 'PX', ARGV[3])
  redis.call('ZREM', KEYS[3], token)
  redis.call('ZREM', KEYS[4], token)
  return {1, fence}
end
if not redis.call('ZSCORE', KEYS[3], token) then
  local tail = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  redis.call('ZADD', KEYS[3], str((tonumber(tail[2]) or 0) + 1), token)
  head = head or token
end
redis.call('ZADD', KEYS[4], str(nowMs + ttl), token)
redis.call('PEXPIRE', KEYS[3], ARGV[2])
redis.call('PEXPIRE', KEYS[4], ARGV[2])
if pttl ~= -2 then return {0, pttl} end
return {0, tonumber(redis.call('ZSCORE', KEYS[4], head)) - nowMs}
`;

/** KEYS: lease; ARGV: the holder's value, TTL ms. 1: renewed; 0: gone; -1: another holder's. */
export const RENEW = `
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if value then return -1 end
return 0
`;

/** KEYS: lease, queue; ARGV: the holder's value, channel key, pub/sub channel. Wakes waiters, if any. */
export const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PUBLISH', ARGV[3], ARGV[2]) end
return 1
`;

/**
 * KEYS: queue, deadlines, lease; ARGV: token, channel key, pub/sub channel. A head waiter leaving a
 * free lease wakes the ones behind it.
 */
export const LEAVE = `
local head = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if head == ARGV[1] and redis.call('EXISTS', KEYS[3]) == 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PUBLISH', ARGV[3], ARGV[2])
end
return 0
`;

/** What one acquire script call decided. */
export type AcquireOutcome =
  | { readonly kind: 'acquired'; readonly fence: number }
  /** Queued; `expiresInMs` is when the holder's lease (or the dead head waiter) runs out, -1 unknown. */
  | { readonly kind: 'queued'; readonly expiresInMs: number };

/** The acquire script's reply as a value. */
export function parseAcquireReply(reply: unknown): AcquireOutcome {
  if (Array.isArray(reply) && reply.length === 2) {
    const [taken, value] = reply as [unknown, unknown];
    const n = Number(value);
    if (taken === 1 && Number.isSafeInteger(n) && n > 0) return { kind: 'acquired', fence: n };
    if (taken === 0 && Number.isSafeInteger(n)) return { kind: 'queued', expiresInMs: n };
  }
  throw new InvariantError(`unexpected reply of the channel lease script: ${JSON.stringify(reply)}`);
}

/** The renew script's reply as a loss, or undefined when the lease was renewed. */
export function renewalLoss(reply: unknown): ChannelLeaseLoss | undefined {
  if (reply === 1) return undefined;
  return reply === -1 ? 'taken' : 'expired';
}
