-- wrk: POST /filter with the body in the file $WRK_BODY; at the end one line
-- "wrk-summary REQUESTS DURATION_US CONNECT READ WRITE STATUS TIMEOUT P50 P90
-- P99 MAX" (errors by kind, latencies in ms).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("WRK_BODY"), "r"))
wrk.body = f:read("*a")
f:close()
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("wrk-summary %d %d %d %d %d %d %d %.3f %.3f %.3f %.3f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000))
end
