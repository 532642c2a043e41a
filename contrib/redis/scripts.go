package redis

import (
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// The state of one fleet bulkhead in Redis, under keys that share the hash
// tag {name} (so they live in one slot of a cluster):
//
//	PREFIX{NAME}:leases   sorted set: lease id -> expiry (ms, server time)
//	PREFIX{NAME}:queue    sorted set: ticket id -> ticket number (fleet order)
//	PREFIX{NAME}:alive    sorted set: ticket id -> ticket expiry (ms)
//	PREFIX{NAME}:seq      counter: ticket numbers and fencing tokens
//	PREFIX{NAME}:config   hash: limit (set by ChangeConfig; absent: each
//	                      replica's Config.MaxConcurrentCalls)
//	PREFIX{NAME}:released pub/sub channel: NAME, "a permit may be free";
//	                      configPayload+NAME, "the limit changed"
//
// Every script reads the time with TIME, so the clocks of the replicas do
// not matter, and first drops expired leases (holders that crashed) and
// expired tickets (waiters whose process crashed).
//
// seq never issues a number below the server time in microseconds: after
// a restart that lost it, or a failover to a replica that had not received
// its last increments, new numbers still exceed every number issued
// before, as long as fewer than one number per microsecond was issued on
// average (Redis runs far fewer scripts) and the new server's clock is not
// behind the old one's by more than the time the failover took.
//
// No key outlives its use: leases, queue and alive live as long as their
// longest-lived member (each script that writes a member makes the key
// live at least that member's TTL, never shortening it, whatever the TTLs
// of the other replicas), seq twice the longest TTL after its last number
// (the floor carries on from there). So the keys of a name nobody uses any
// more (a bulkhead evicted from every Registry, a replica gone) expire by
// themselves. config, set only by ChangeConfig, is kept: it is an
// operator's setting.
type keys struct {
	channel string
	list    []string // leases, queue, alive, seq, config: the KEYS of every script
}

// configPayload starts the release-channel message of a limit change (a
// name cannot contain '{').
const configPayload = "{config}"

// newKeys makes the keys of name: six strings cut from one allocation,
// since a Registry may hold many bulkheads.
func newKeys(prefix, name string) keys {
	base := prefix + "{" + name + "}:"
	suffixes := [...]string{"leases", "queue", "alive", "seq", "config", "released"}
	var b strings.Builder
	b.Grow(len(suffixes)*len(base) + 34)
	for _, x := range suffixes {
		b.WriteString(base)
		b.WriteString(x)
	}
	all := b.String()
	var cut [len(suffixes)]string
	at := 0
	for i, x := range suffixes {
		n := len(base) + len(x)
		cut[i], at = all[at:at+n], at+n
	}
	return keys{channel: cut[5], list: cut[:5:5]}
}

// channelPattern is the PSUBSCRIBE pattern that matches the release channel
// of every bulkhead under prefix; glob characters of the prefix are escaped.
func channelPattern(prefix string) string {
	var b strings.Builder
	for _, r := range prefix {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteString("{*}:released")
	return b.String()
}

// Outcome codes of the round script, one per request.
const (
	codeGranted   = 1 // value: fencing token
	codeQueued    = 2 // value: ticket number (a new ticket)
	codeWaiting   = 3 // still queued with its ticket
	codeNoWait    = 4 // rejected: no permit and the request may not wait
	codeQueueFull = 5 // rejected: this process already queues MaxQueuedCalls
)

// scriptPrelude reads the time, drops what expired and counts the queue;
// a key holding another type gives an error that names it.
const scriptPrelude = `
local function typeerror(key, want)
  return redis.error_reply('RXBTYPE key ' .. key .. ' holds a ' .. redis.call('TYPE', key).ok .. ', not a ' .. want)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The first command on each key is a pcall, so that a key of another type
-- gives an error naming it (no TYPE call on the hot path).
local purged = redis.pcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if type(purged) == 'table' then return typeerror(KEYS[1], 'zset') end
local queued = redis.pcall('ZCARD', KEYS[2])
if type(queued) == 'table' then return typeerror(KEYS[2], 'zset') end
-- queue and alive hold the same ids: with no ticket there is no dead one.
local dead = {}
if queued > 0 then
  dead = redis.pcall('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 1000)
  if dead.err then return typeerror(KEYS[3], 'zset') end
end
for i = 1, #dead, 500 do
  queued = queued - redis.call('ZREM', KEYS[2], unpack(dead, i, math.min(i + 499, #dead)))
  redis.call('ZREM', KEYS[3], unpack(dead, i, math.min(i + 499, #dead)))
end
-- alive is read only while tickets exist: a write names its type.
local function zaddalive(score, id)
  local r = redis.pcall('ZADD', KEYS[3], score, id)
  if type(r) == 'table' then error(typeerror(KEYS[3], 'zset')) end
end
-- keep makes key live at least ms more (never less than it already
-- does): a key outlives every member written into it, whatever the TTLs
-- of the replicas, and expires by itself once nobody writes it.
local function keep(key, ms)
  local ttl = redis.call('PTTL', key)
  if ttl == -1 or (ttl >= 0 and ttl < ms) then redis.call('PEXPIRE', key, ms) end
end
-- The fleet limit: the one stored by ChangeConfig, else the caller's.
local function fleetlimit(default)
  local l = redis.pcall('HGET', KEYS[5], 'limit')
  if type(l) == 'table' then
    if string.find(l.err, 'WRONGTYPE', 1, true) then error(typeerror(KEYS[5], 'hash')) end
    error(l)
  end
  if l then return tonumber(l) end
  return default
end
local seqused = false
local function nextseq()
  seqused = true
  local n = redis.pcall('INCR', KEYS[4])
  if type(n) == 'table' then error(typeerror(KEYS[4], 'counter')) end
  -- Never below the server clock in µs: a counter lost in a restart, or
  -- rolled back by a failover to a replica that lagged, resumes above
  -- every number issued before (see keys).
  local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if n < floor then
    n = floor
    redis.call('SET', KEYS[4], n)
  end
  return n
end
`

// roundScript is one round trip of one bulkhead: it gives back leases,
// withdraws tickets, then decides requests in the order given.
//
// ARGV: limit, leaseTTL(ms), ticketTTL(ms), channel, message, nRelease,
// nWithdraw, room (tickets this process may still add, -1 unbounded), the
// nRelease lease ids, the nWithdraw ticket ids, then pairs (id, kind):
// kind "w" is a waiter that holds a ticket, "n" a new request that may
// wait, "t" one that may not.
//
// A permit is free when fewer than limit leases exist. The first `free`
// tickets of the queue (oldest first) may take one; a request without a
// ticket may take one only if every ticket could too (free > queued), so
// nobody overtakes an older waiter anywhere in the fleet. When permits are
// left free while tickets wait (a release, a withdrawal or an expiry made
// room for a waiter of another process), the round publishes on the
// release channel.
//
// ARGV[1] is this replica's configured limit, used only while no limit is
// stored in the config hash.
//
// Reply: held, queued, the fleet limit, then (code, value) per request.
var roundScript = goredis.NewScript(scriptPrelude + `
local limit, leasettl, tickettl = fleetlimit(tonumber(ARGV[1])), tonumber(ARGV[2]), tonumber(ARGV[3])
local nrel, nwd, room = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local changed = purged > 0 or #dead > 0
local i = 9
for j = i, i + nrel - 1, 500 do
  if redis.call('ZREM', KEYS[1], unpack(ARGV, j, math.min(j + 499, i + nrel - 1))) > 0 then changed = true end
end
i = i + nrel
for j = i, i + nwd - 1, 500 do
  local last = math.min(j + 499, i + nwd - 1)
  if redis.call('ZREM', KEYS[2], unpack(ARGV, j, last)) > 0 then changed = true end
  redis.call('ZREM', KEYS[3], unpack(ARGV, j, last))
end
i = i + nwd
local held = redis.call('ZCARD', KEYS[1])
if nwd > 0 then queued = redis.call('ZCARD', KEYS[2]) end
local free = limit - held
local heads = {}
if free > 0 and queued > 0 then
  for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, free - 1)) do heads[m] = true end
end
local out = {0, 0, limit}
local granted, ticketed = false, false
local function grant(id)
  granted = true
  redis.call('ZADD', KEYS[1], now + leasettl, id)
  held = held + 1
  free = free - 1
  out[#out + 1] = 1
  out[#out + 1] = nextseq()
end
for j = i, #ARGV, 2 do
  local id, kind = ARGV[j], ARGV[j + 1]
  if kind == 'w' and heads[id] then
    redis.call('ZREM', KEYS[2], id)
    redis.call('ZREM', KEYS[3], id)
    queued = queued - 1
    heads[id] = nil
    grant(id)
  elseif kind == 'w' and redis.call('ZSCORE', KEYS[2], id) then
    zaddalive(now + tickettl, id)
    ticketed = true
    out[#out + 1] = 3
    out[#out + 1] = 0
  elseif free > queued then
    -- a new request, or a waiter whose ticket was lost (expired, or a
    -- restart): it takes a permit nobody waits for
    grant(id)
  elseif kind == 't' then
    out[#out + 1] = 4
    out[#out + 1] = 0
  elseif kind == 'n' and room == 0 then
    out[#out + 1] = 5
    out[#out + 1] = 0
  else
    local n = nextseq()
    redis.call('ZADD', KEYS[2], n, id)
    zaddalive(now + tickettl, id)
    ticketed = true
    queued = queued + 1
    if kind == 'n' and room > 0 then room = room - 1 end
    out[#out + 1] = 2
    out[#out + 1] = n
  end
end
if granted then keep(KEYS[1], leasettl) end
if seqused then
  -- The counter expires once unused for twice the longest TTL: by then
  -- the floor is above every number it issued (see keys).
  redis.call('PEXPIRE', KEYS[4], 2 * math.max(leasettl, tickettl))
end
if ticketed then
  keep(KEYS[2], tickettl)
  keep(KEYS[3], tickettl)
end
if changed and free > 0 and queued > 0 then
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
out[1] = held
out[2] = queued
return out
`)

// renewScript extends the leases and tickets this process holds.
//
// ARGV: limit, leaseTTL(ms), ticketTTL(ms), nLeases, lease ids, ticket ids.
// A lease that is no longer there (it expired while this process could not
// reach Redis, or Redis restarted without persistence) is added back if a
// permit is free, so that the fleet counts the call that is still running;
// otherwise it is reported lost.
//
// Reply: missing tickets, then one code per lease: 0 renewed, 1 restored,
// 2 lost.
var renewScript = goredis.NewScript(scriptPrelude + `
local limit, leasettl, tickettl, nl = fleetlimit(tonumber(ARGV[1])), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {0}
local held = redis.call('ZCARD', KEYS[1])
for j = 5, 4 + nl do
  local id = ARGV[j]
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + leasettl, id) == 1 or redis.call('ZSCORE', KEYS[1], id) then
    out[#out + 1] = 0
  elseif held < limit then
    redis.call('ZADD', KEYS[1], now + leasettl, id)
    held = held + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = 2
  end
end
for j = 5 + nl, #ARGV do
  if redis.call('ZADD', KEYS[3], 'XX', now + tickettl, ARGV[j]) == 0 and not redis.call('ZSCORE', KEYS[2], ARGV[j]) then
    out[1] = out[1] + 1
  end
end
if nl > 0 then keep(KEYS[1], leasettl) end
if #ARGV > 4 + nl then
  keep(KEYS[2], tickettl)
  keep(KEYS[3], tickettl)
end
return out
`)

// statsScript counts the live leases and tickets of the fleet (after
// dropping the expired ones, as every script does) and reads the stored
// limit (ARGV[1] if none). Reply: held, queued, limit.
var statsScript = goredis.NewScript(scriptPrelude + `
local t3 = redis.call('TYPE', KEYS[3]).ok
if t3 ~= 'none' and t3 ~= 'zset' then return typeerror(KEYS[3], 'zset') end
local t4 = redis.call('TYPE', KEYS[4]).ok
if t4 ~= 'none' and t4 ~= 'string' then return typeerror(KEYS[4], 'counter') end
return {redis.call('ZCARD', KEYS[1]), queued, fleetlimit(tonumber(ARGV[1]))}
`)

// changeScript stores the fleet limit and tells every replica (ARGV:
// limit, channel, message). Waiters that the new limit admits are woken by
// the same message. Reply: the previous stored limit, or 0.
var changeScript = goredis.NewScript(`
local t5 = redis.call('TYPE', KEYS[5]).ok
if t5 ~= 'none' and t5 ~= 'hash' then
  return redis.error_reply('RXBTYPE key ' .. KEYS[5] .. ' holds a ' .. t5 .. ', not a hash')
end
local old = redis.call('HGET', KEYS[5], 'limit')
redis.call('HSET', KEYS[5], 'limit', ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return tonumber(old or '0')
`)

var allScripts = []*goredis.Script{roundScript, renewScript, statsScript, changeScript}
