-- cjson.encode as Redis's lua-cjson does it: numbers with 14 significant digits, "/" escaped,
-- a table whose keys are all positive integers is an array (holes are null; an array more
-- than half holes past index 10 is "excessively sparse"), any other table an object, an
-- empty table "{}", cjson.null is null. Written in Lua so that objects list their keys in the
-- order Lua's own table walk gives them, the order Redis's encoder walks them in.
local null = ...
local type, pairs, tostring, error, floor = type, pairs, tostring, error, math.floor
local format, gsub, byte, concat = string.format, string.gsub, string.byte, table.concat

local escapes = {
  ['"'] = '\\"', ['\\'] = '\\\\', ['/'] = '\\/', ['\b'] = '\\b', ['\f'] = '\\f',
  ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t',
}
local function escape_char(c)
  return escapes[c] or format("\\u%04x", byte(c))
end
local function quote(s)
  return '"' .. gsub(s, '[%c"\\/]', escape_char) .. '"'
end

local function number(n)
  if n ~= n or n == math.huge or n == -math.huge then
    error("Cannot serialise number: must not be NaN or Inf", 0)
  end
  return format("%.14g", n)
end

local encode

local function array_length(t)
  local max, count = 0, 0
  for k in pairs(t) do
    if type(k) == "number" and k > 0 and floor(k) == k then
      if k > max then max = k end
      count = count + 1
    else
      return -1
    end
  end
  if max > 10 and max > count * 2 then
    error("Cannot serialise table: excessively sparse array", 0)
  end
  return max
end

local function encode_table(t, depth, out)
  if depth > 1000 then
    error("Cannot serialise, excessive nesting (" .. depth .. ")", 0)
  end
  local n = array_length(t)
  if n > 0 then
    out[#out + 1] = "["
    for i = 1, n do
      if i > 1 then out[#out + 1] = "," end
      encode(t[i], depth + 1, out)
    end
    out[#out + 1] = "]"
    return
  end
  out[#out + 1] = "{"
  local first = true
  for k, v in pairs(t) do
    local kt = type(k)
    local key
    if kt == "string" then
      key = quote(k)
    elseif kt == "number" then
      key = '"' .. number(k) .. '"'
    else
      error("Cannot serialise " .. kt .. ": table key must be a number or string", 0)
    end
    if not first then out[#out + 1] = "," end
    first = false
    out[#out + 1] = key
    out[#out + 1] = ":"
    encode(v, depth + 1, out)
  end
  out[#out + 1] = "}"
end

encode = function(v, depth, out)
  local t = type(v)
  if t == "string" then
    out[#out + 1] = quote(v)
  elseif t == "number" then
    out[#out + 1] = number(v)
  elseif t == "boolean" then
    out[#out + 1] = tostring(v)
  elseif t == "nil" or v == null then
    out[#out + 1] = "null"
  elseif t == "table" then
    encode_table(v, depth, out)
  else
    error("Cannot serialise " .. t .. ": type not supported", 0)
  end
end

return function(v)
  local out = {}
  encode(v, 1, out)
  return concat(out)
end
