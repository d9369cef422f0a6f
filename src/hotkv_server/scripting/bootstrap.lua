-- The sandbox every EVAL script runs in, built once per Lua state (hotkv_server/scripting/sandbox.py).
--
-- Called with one table of host (Python) functions. It keeps private references to what the
-- sandbox itself needs (debug.getinfo, debug.sethook, the raw pcall), then builds the globals a
-- script sees: Redis 7.0's list (base functions without dofile/loadfile/require/print/setfenv/
-- getfenv/module/newproxy, and string, table, math, coroutine, bit, cjson, cmsgpack, struct,
-- redis). Those globals and every library table are read-only, as Redis 7 makes them: a write
-- answers "Attempt to modify a readonly table", reading a missing global answers "Script
-- attempted to access nonexistent global variable". The host's `python` module, os, io, debug
-- and package are not reachable from a script. Returns the functions the host calls.
local host = ...

local getinfo, sethook = debug.getinfo, debug.sethook
local raw_pcall, raw_xpcall, raw_error = pcall, xpcall, error
local raw_setmetatable, raw_getmetatable = setmetatable, getmetatable
local raw_rawset, raw_type, raw_tostring, raw_select = rawset, type, tostring, select
local raw_loadstring, raw_setfenv, raw_unpack = loadstring, setfenv, unpack
local READONLY = "Attempt to modify a readonly table"
local host_error_of = host.error_of

-- tables made read-only: proxy -> true; what getmetatable() shows for a proxy (nil for a library)
local protected = raw_setmetatable({}, {__mode = "k"})
local shown_meta = raw_setmetatable({}, {__mode = "k"})

local function refuse_write()
  raw_error(READONLY, 2)
end

local function protect(real, shown)
  local proxy = raw_setmetatable({}, {__index = real, __newindex = refuse_write, __metatable = false})
  protected[proxy] = true
  shown_meta[proxy] = shown
  return proxy
end

local null_value = host.cjson_null
local raw_rawget, raw_tonumber, meta_of = rawget, tonumber, debug.getmetatable

-- a base function's argument error as Lua words and places it for the C function the
-- wrapper stands for (luaL_argerror): named as the script called it ('?' through pcall),
-- at the script's line. A script's `return f(...)` tail-calls a Lua wrapper (a C function
-- keeps the script's frame): the wrapper's own name then, and no line is left to name
local function arg_error(n, extra, own_name)
  local info = getinfo(2, "n")  -- (the wrapper, as its caller named it)
  local name = info and info.name
  if name == nil then
    local caller = getinfo(3, "S")
    name = caller and caller.what == "tail" and own_name or "?"
  end
  raw_error("bad argument #" .. n .. " to '" .. name .. "' (" .. extra .. ")", 3)
end

-- luaL_typename of argument n: "no value" past the last one
local function type_of_arg(n, ...)
  if raw_select("#", ...) < n then return "no value" end
  return raw_type((raw_select(n, ...)))
end

local function safe_getmetatable(...)
  if raw_select("#", ...) < 1 then arg_error(1, "value expected", "getmetatable") end
  local t = ...
  if protected[t] then return shown_meta[t] end
  if t == null_value then return nil end  -- a light userdata in Redis: no metatable
  return raw_getmetatable(t)
end

-- functions that would write into a read-only table refuse, as Redis's patched Lua does
-- (after the argument checks of the C function, which would otherwise name the sandbox)
local function safe_rawset(...)
  local t, k, v = ...
  if raw_type(t) ~= "table" then
    arg_error(1, "table expected, got " .. type_of_arg(1, ...), "rawset")
  end
  local n = raw_select("#", ...)
  if n < 3 then arg_error(n + 1, "value expected", "rawset") end
  if protected[t] ~= nil then raw_error(READONLY, 0) end
  return raw_rawset(t, k, v)
end

local function safe_setmetatable(...)
  local t, m = ...
  if raw_type(t) ~= "table" then
    arg_error(1, "table expected, got " .. type_of_arg(1, ...), "setmetatable")
  end
  if raw_select("#", ...) < 2 or (m ~= nil and raw_type(m) ~= "table") then
    arg_error(2, "nil or table expected", "setmetatable")
  end
  if protected[t] ~= nil then raw_error(READONLY, 0) end
  local mt = meta_of(t)
  if mt ~= nil and raw_rawget(mt, "__metatable") ~= nil then
    raw_error("cannot change a protected metatable", 2)
  end
  return raw_setmetatable(t, m)
end

-- an error raised by redis.call is a table {err = "..."}; a script's pcall sees its text, as
-- in Redis 7.0 (xpcall's handler sees the table)
local function pcall_result(ok, ...)
  if not ok then
    local e = ...
    if raw_type(e) == "userdata" then
      local kind, text = host_error_of(e)
      if kind ~= nil then return false, text end
    elseif raw_type(e) == "table" and e.err ~= nil then
      return false, e.err
    end
  end
  return ok, ...
end

local function safe_pcall(f, ...)
  return pcall_result(raw_pcall(f, ...))
end

local env  -- the script globals (a read-only proxy), set below

-- loadstring of text only (a binary chunk is refused, as Redis does); the chunk runs in the
-- script globals, never in the host's
local function safe_loadstring(...)
  local text, name = ...
  local kind = raw_type(text)
  if kind ~= "string" and kind ~= "number" then
    arg_error(1, "string expected, got " .. type_of_arg(1, ...), "loadstring")
  end
  if name ~= nil and raw_type(name) ~= "string" and raw_type(name) ~= "number" then
    arg_error(2, "string expected, got " .. raw_type(name), "loadstring")
  end
  if raw_type(text) == "string" and text:byte(1) == 27 then
    return nil, "loadstring of binary chunks is not allowed"
  end
  local f, err = raw_loadstring(text, name)
  if f == nil then return nil, err end
  raw_setfenv(f, env)
  return f
end

local function safe_load(fn, name)
  if raw_type(fn) ~= "function" then
    raw_error("bad argument #1 to 'load' (function expected, got " .. raw_type(fn) .. ")", 2)
  end
  local parts = {}
  while true do
    local piece = fn()
    if piece == nil or piece == "" then break end
    if raw_type(piece) ~= "string" then
      return nil, "reader function must return a string"
    end
    parts[#parts + 1] = piece
  end
  return safe_loadstring(table.concat(parts), name or "=(load)")
end

local real = {}
for _, name in ipairs({"assert", "collectgarbage", "error", "gcinfo", "ipairs",
                       "next", "pairs", "rawequal", "rawget", "select", "tonumber", "tostring",
                       "type", "unpack", "xpcall", "_VERSION"}) do
  real[name] = _G[name]
end
real.rawset = safe_rawset
real.getmetatable = safe_getmetatable
real.setmetatable = safe_setmetatable
real.pcall = safe_pcall
real.loadstring = safe_loadstring
real.load = safe_load

local function copy(t)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  return out
end

real.string = protect(copy(string))
real.table = protect(copy(table))
real.math = protect(copy(math))
local co_create, co_resume = coroutine.create, coroutine.resume
local hooked = {}  -- filled with the kill hook below (coroutines have hooks of their own)
local co = copy(coroutine)
co.create = function(f)
  local thread = co_create(f)
  if hooked.fn then sethook(thread, hooked.fn, "", hooked.every) end
  return thread
end
co.wrap = function(f)
  local thread = co.create(f)
  return function(...)
    local function finish(ok, ...)
      if not ok then raw_error((...), 0) end
      return ...
    end
    return finish(co_resume(thread, ...))
  end
end
real.coroutine = protect(co)
real.bit = protect(host.bit)
real.struct = protect(host.struct)

-- strings index the read-only string table, and their metatable cannot be changed either
local string_meta = raw_getmetatable("")
string_meta.__index = real.string
string_meta.__metatable = protect({__index = real.string}, nil)

-- cjson, cmsgpack, bit and struct are host functions (lupa calls them like C functions, so
-- a script's frame stays on the stack in a tail call and errors name the script's line)
local cjson_null = host.cjson_null
real.cjson = protect(host.cjson)
real.cmsgpack = protect(host.cmsgpack)

-- the redis table: call and pcall are host functions too (see above)
local redis = {}
redis.call = host.call
redis.pcall = host.pcall

-- a redis library function's error as Redis raises it (luaPushError, then lua_error): an
-- error table {err = "ERR ..."}, which a script's pcall sees as its text
local function lib_error(text)
  raw_error({err = "ERR " .. text}, 0)
end

-- one string argument, exactly (a number is refused, as Redis checks the Lua type):
-- anything else is answered, not raised, with an error table
local function one_string(...)
  return raw_select("#", ...) == 1 and raw_type((...)) == "string"
end
local WRONG_ARGS = "ERR wrong number or type of arguments"

-- an error reply's text as Redis keeps it in the table: "CODE message", with ERR for a text
-- without a first word (error_reply("x") is "ERR x")
redis.error_reply = function(...)
  if not one_string(...) then return {err = WRONG_ARGS} end
  local msg = (...):match("^[^%z]*")  -- (a C string: it ends at a NUL)
  if msg:sub(1, 1) == "-" then msg = msg:sub(2) end
  if not msg:find(" ", 1, true) then msg = "ERR " .. msg end
  return {err = msg}
end

redis.status_reply = function(...)
  if not one_string(...) then return {err = WRONG_ARGS} end
  return {ok = (...)}
end

redis.sha1hex = function(...)
  if raw_select("#", ...) ~= 1 then lib_error("wrong number of arguments") end
  return host.sha1hex((...))
end

redis.log = function(level, ...)
  local n = raw_select("#", ...)
  if n < 1 then lib_error("redis.log() requires two arguments or more.") end
  if raw_type(level) ~= "number" then lib_error("First argument must be a number (log level).") end
  local parts = {}
  for i = 1, n do
    local v = raw_select(i, ...)
    parts[#parts + 1] = raw_tostring(v)
  end
  host.log(level, table.concat(parts, " "))
end

redis.setresp = host.setresp

-- (Redis 7.0 words a wrong count "requires two arguments"; the flags are lua_tonumber's
-- reading of the argument, truncated: nil or a table is 0, REPL_NONE)
redis.set_repl = function(...)
  if raw_select("#", ...) ~= 1 then lib_error("redis.set_repl() requires two arguments.") end
  local flags = raw_tonumber((...)) or 0
  if flags ~= flags or flags <= -1 or flags >= 4 then
    lib_error("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
  end
end

redis.replicate_commands = function() return true end

redis.breakpoint = function() return false end

redis.debug = function() end

redis.acl_check_cmd = host.acl_check_cmd

redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REDIS_VERSION = host.version_text
redis.REDIS_VERSION_NUM = host.version_num

real.redis = protect(redis)

local function missing_global(_, name)
  raw_error("Script attempted to access nonexistent global variable '" .. raw_tostring(name) .. "'", 2)
end

raw_setmetatable(real, {__index = missing_global})
env = protect(real, protect({__index = missing_global}))
real._G = env

-- where an error happened, as Redis's handler finds it: the innermost frame that is neither a
-- C function nor the sandbox's own code (this file is loaded as "=hotkv_sandbox")
local function error_handler(err)
  local source, line = "?", "?"
  local level = 2
  while true do
    local info = getinfo(level, "Sl")
    if info == nil then break end
    if info.what ~= "C" and info.source ~= "=hotkv_sandbox" then
      source, line = info.source, info.currentline
      break
    end
    level = level + 1
  end
  if raw_type(err) == "userdata" then
    -- raised by a host function: a redis.call error reply ("reply", kept as it is) or a
    -- library's error ("lib", a message as Lua's own errors are)
    local kind, text = host_error_of(err)
    if kind == "reply" then
      -- counted in errorstats when the call made it: the script's failure is not again
      return {err = text, source = source, line = line, counted = true}
    end
    return {err = "ERR " .. raw_tostring(text), source = source, line = line}
  end
  if raw_type(err) == "table" then
    if err.err == nil then
      -- a table without err (error({})): Redis 7.0 crashes on it; hotkv answers an unknown error
      return {err = "ERR unknown error", source = source, line = line}
    end
    return {err = raw_tostring(err.err), source = source, line = line,
            counted = err.ignore_error_stats_update == true}
  end
  return {err = "ERR " .. raw_tostring(err), source = source, line = line}
end

-- the count hook asks the host every so many instructions whether SCRIPT KILL asked the
-- script to stop; then a line hook raises at the next line of the script's own code (never
-- inside the sandbox's code, such as the error handler) and at every line after, so a pcall
-- in the script cannot keep it alive
local host_killed = host.killed
local KILLED = "Script killed by user with SCRIPT KILL..."
local function in_script_code()
  local info = getinfo(3, "S")
  return info ~= nil and info.what ~= "C" and info.source ~= "=hotkv_sandbox"
end
local function killed_hook()
  if in_script_code() then raw_error(KILLED, 0) end
end
local killing = false  -- the line hook replaced the count hook (reset after the run)
local function kill_hook()
  if host_killed() then
    killing = true
    sethook(killed_hook, "l")
  end
end

-- the count hook stays installed between runs (asking the host costs one call every
-- HOOK_EVERY instructions, and no script runs then): a run does not set it again
local HOOK_EVERY = 100000
hooked.fn, hooked.every = kill_hook, HOOK_EVERY
sethook(kill_hook, "", HOOK_EVERY)

-- run one compiled script: set KEYS and ARGV, call it with the error handler, and return
-- (true, result) or (false, {err, source, line}). The keys and arguments come either as
-- varargs after their count (cheaper than two tables built by the host) or, for very many,
-- as two tables (nkeys = -1)
local function run(fn, nkeys, ...)
  local keys, argv
  if nkeys < 0 then
    keys, argv = ...
  else
    -- all strings (never nil), so # counts them; the arguments move from the one table
    -- to ARGV (cheaper than a select() per value)
    keys, argv = {...}, {}
    for i = nkeys + 1, #keys do
      argv[i - nkeys] = keys[i]
      keys[i] = nil
    end
  end
  -- `real` has no __newindex: these are plain stores
  real.KEYS = keys
  real.ARGV = argv
  local ok, result = raw_xpcall(fn, error_handler)
  if killing then
    killing = false
    sethook(kill_hook, "", HOOK_EVERY)
  end
  return ok, result
end

-- compile a script body; (function) or (nil, message)
local function compile(body)
  if body:byte(1) == 27 then
    return nil, "user_script: cannot load a binary chunk"
  end
  local fn, err = raw_loadstring(body, "@user_script")
  if fn == nil then return nil, err end
  raw_setfenv(fn, env)
  return fn
end

-- a table built by the host for a reply ({ok=...}, {err=...}, arrays) needs no protection;
-- these helpers let the host make them without touching globals
-- "user_script:3: " for the caller of the host function running now (as luaL_where(L, 1)
-- names a C function's caller), or "" when that is not a line of Lua
local function where()
  local info = getinfo(3, "Sl")
  if info ~= nil and info.currentline > 0 then
    return info.short_src .. ":" .. info.currentline .. ": "
  end
  return ""
end

-- the name the script called the host function running now by (luaL_argerror's), or nil
-- (called through pcall, or a tail call that left no name)
local function called_as()
  local info = getinfo(2, "n")
  return info and info.name
end

return {run = run, compile = compile, null = cjson_null, env = env, where = where,
        called_as = called_as}
