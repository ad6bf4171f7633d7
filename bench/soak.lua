-- wrk script for bench/soak.py: a mix of AdmissionReviews over keep-alive
-- connections, at a rate set by a per-request delay.
-- usage: wrk ... -s soak.lua URL -- DELAY_MS BODY_FILE PATH [BODY_FILE PATH ...]
-- DELAY_MS may have a fraction: wrk waits whole milliseconds, so the delays
-- alternate between the two nearest whole values, averaging DELAY_MS.
-- A body containing COLD-TAG gets a tag no request used before, so its image
-- is looked up in the registry. At the end prints "RESULT {json}" (latencies
-- in microseconds; err_status counts answers that are not 2xx or 3xx).

local bodies = {}
local delay_ms = 0
local carried = 0  -- the fraction of a millisecond owed to later delays
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  delay_ms = tonumber(args[1])
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
  local whole = math.floor(delay_ms)
  carried = carried + (delay_ms - whole)
  if carried >= 1 then
    carried = carried - 1
    whole = whole + 1
  end
  return whole
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
