-- wrk script for bench/load/soak.py: a mix of AdmissionReviews over keep-alive
-- connections, paced to a request rate.
-- usage: wrk ... -s soak.lua URL -- RATE BODY_FILE PATH [BODY_FILE PATH ...]
-- RATE is requests per second for the thread, 0 for as fast as the server
-- answers. Pacing is open-loop: request n is due at start + n / RATE whatever
-- the latencies were, so a server that slows down is asked the same rate
-- (and falls short of it only when every connection is waiting on it). A
-- schedule that falls behind catches up at most one second's worth of
-- requests, so a stall is not followed by a long burst. A body containing
-- COLD-TAG gets a tag no request used before, so its image is looked up in
-- the registry. At the end prints "RESULT {json}" (latencies in
-- microseconds; err_status counts answers that are not 2xx or 3xx).

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } soak_timespec;
int clock_gettime(int clock, soak_timespec *out);
]]
local CLOCK_MONOTONIC = 1
local now_buf = ffi.new("soak_timespec")
local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, now_buf)
  return tonumber(now_buf.tv_sec) + tonumber(now_buf.tv_nsec) * 1e-9
end

local bodies = {}
local rate = 0
local next_due  -- when the next request is due, seconds on CLOCK_MONOTONIC
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  rate = tonumber(args[1])
  thread_id = id
  for i = 2, #args, 2 do
    local f = assert(io.open(args[i], "rb"))
    local text = f:read("*a")
    f:close()
    table.insert(bodies, {text = text, path = args[i + 1], cold = text:find("COLD-TAG", 1, true) ~= nil})
  end
  if #bodies == 0 then error("soak.lua: no bodies") end
end

function delay()
  if rate <= 0 then return 0 end
  local t = now()
  -- a schedule more than a second behind forgets the rest
  local due = math.max(next_due or t, t - 1)
  next_due = due + 1 / rate
  if due <= t then return 0 end
  return math.floor((due - t) * 1000 + 0.5)
end

function request()
  counter = counter + 1
  local b = bodies[(counter % #bodies) + 1]
  local text = b.text
  if b.cold then text = text:gsub("COLD%-TAG", "t" .. thread_id .. "-" .. counter) end
  return wrk.format("POST", b.path, {["Content-Type"] = "application/json"}, text)
end

function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    'RESULT {"requests":%d,"duration_s":%.3f,"rps":%.1f,' ..
    '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d,' ..
    '"lat_mean_us":%.1f,"p50_us":%d,"p99_us":%d,"p999_us":%d,"lat_max_us":%d}\n',
    summary.requests, secs, summary.requests / secs,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    latency.max))
end
