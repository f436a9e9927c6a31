-- wrk script of scripts/bench/serve.sh: every request POSTs the DER OCSP
-- request in the file named by the environment variable OCSP_REQ.
local f = assert(io.open(os.getenv("OCSP_REQ"), "rb"))
local body = f:read("*a")
f:close()
wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/ocsp-request"
