-- wpp real-workload benchmark script for Lua 5.4 (run by bench/workloads/lua/driver.c).
--   lua-driver bench.lua N      -- N scales the work linearly-ish (1 = small, CI)
-- Exercises tables, string operations, closures, recursion, coroutines, metatables and
-- pcall/error (Lua's setjmp/longjmp error path). Output is deterministic: no clocks, no
-- math.random, no addresses, no iteration over hash order without sorting.
local N = math.tointeger(tonumber(arg and arg[1] or ...) or 1) or 1
local out = {}
local function emit(...) out[#out + 1] = table.concat({...}, " ") end

-- our own PRNG (LCG), so results do not depend on math.random's seeding
local seed = 12345
local function rand(m)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % m
end

-- 1. recursion: naive fib, Ackermann, binary trees (allocation + GC)
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local function ack(m, n)
  if m == 0 then return n + 1 end
  if n == 0 then return ack(m - 1, 1) end
  return ack(m - 1, ack(m, n - 1))
end
local function tree(d)
  if d == 0 then return {} end
  return { tree(d - 1), tree(d - 1) }
end
local function check(t)
  if t[1] == nil then return 1 end
  return 1 + check(t[1]) + check(t[2])
end
do
  local nodes = 0
  for i = 1, N do nodes = nodes + check(tree(10 + i % 3)) end
  emit("recursion", fib(18 + (N > 1 and 4 or 0)), ack(2, 3 + N % 5), nodes)
end

-- 2. tables: array fill, sort with and without comparator, hash tables with string keys
do
  local t = {}
  for i = 1, 5000 * N do t[i] = rand(100000) end
  table.sort(t)
  local ok = true
  for i = 2, #t do if t[i - 1] > t[i] then ok = false end end
  local u = {}
  for i = 1, #t do u[i] = { key = t[i] % 97, id = i } end
  table.sort(u, function(a, b)
    if a.key ~= b.key then return a.key > b.key end
    return a.id < b.id
  end)
  local counts, keys = {}, {}
  for i = 1, 4000 * N do
    local w = string.format("w%04d", rand(700))
    if counts[w] == nil then keys[#keys + 1] = w; counts[w] = 0 end
    counts[w] = counts[w] + 1
  end
  table.sort(keys, function(a, b)
    return counts[a] > counts[b] or (counts[a] == counts[b] and a < b)
  end)
  table.insert(t, 1, -1); table.remove(t, 2)
  emit("tables", tostring(ok), t[1], t[#t // 2], t[#t], u[1].id, u[#u].id,
       #keys, keys[1] .. "=" .. counts[keys[1]], keys[#keys] .. "=" .. counts[keys[#keys]])
end

-- 3. strings: format, concat, rep, gsub, gmatch, find, byte/char, upper/lower, pack
do
  local parts = {}
  for i = 1, 3000 * N do parts[#parts + 1] = string.format("%d:%x:%s", i, i * 7, tostring(i):rep(2)) end
  local big = table.concat(parts, ",")
  local matches = 0
  for _ in big:gmatch("1%d1") do matches = matches + 1 end
  local replaced, nrep = big:gsub("(%d)(%d)", "%2%1")
  local h = 0
  for i = 1, #replaced, 7 do h = (h * 31 + replaced:byte(i)) % 1000000007 end
  local pos, found = 1, 0
  while true do
    local s, e = big:find("99", pos, true)
    if not s then break end
    found = found + 1; pos = e + 1
  end
  local caps = big:sub(1, 60):upper():lower():reverse()
  local packed = string.pack("<i4i8d", 42, N, 0.5)
  local a, b, c = string.unpack("<i4i8d", packed)
  emit("strings", #big, matches, nrep, h, found, caps, #packed, a, b, c, string.char(72, 105))
end

-- 4. closures: counters, accumulators, composed functions, upvalues shared between closures
do
  local function counter()
    local c = 0
    return function() c = c + 1; return c end, function() return c end
  end
  local inc, get = counter()
  local adders = {}
  for i = 1, 64 do adders[i] = function(x) return (x + i * i) % 1000003 end end
  local function compose(f, g) return function(x) return f(g(x)) end end
  local f = adders[1]
  for i = 2, 16 do f = compose(adders[i], f) end
  local s = 0
  for j = 1, 1500 * N do
    for i = 1, 64 do s = adders[i](s) end
    s = f(s)
    inc()
  end
  emit("closures", s, get())
end

-- 5. coroutines: generators, a producer/filter/consumer pipeline, wrap, yield across pcall
do
  local function gen(n)
    return coroutine.wrap(function()
      for i = 1, n do coroutine.yield(i) end
    end)
  end
  local function filter(src, p)
    return coroutine.wrap(function()
      for v in src do if p(v) then coroutine.yield(v) end end
    end)
  end
  local function map(src, f)
    return coroutine.wrap(function()
      for v in src do coroutine.yield(f(v)) end
    end)
  end
  local sum, cnt = 0, 0
  for v in map(filter(gen(6000 * N), function(x) return x % 3 ~= 0 end), function(x) return x * x % 1009 end) do
    sum = sum + v; cnt = cnt + 1
  end
  -- permutations generator (recursive yields)
  local function permgen(a, n)
    n = n or #a
    if n <= 1 then coroutine.yield(a) else
      for i = 1, n do
        a[n], a[i] = a[i], a[n]
        permgen(a, n - 1)
        a[n], a[i] = a[i], a[n]
      end
    end
  end
  local perms, ph = 0, 0
  for p in coroutine.wrap(function() permgen({1, 2, 3, 4, 5, 6, 7}) end) do
    perms = perms + 1
    ph = (ph * 7 + p[1] * 3 + p[7]) % 65521
  end
  local co = coroutine.create(function(a)
    local ok, err = pcall(function()
      local b = coroutine.yield(a + 1)
      error("boom " .. b, 0)
    end)
    return ok, err
  end)
  local _, first = coroutine.resume(co, 10)
  local _, ok2, err2 = coroutine.resume(co, 5)
  emit("coroutines", sum, cnt, perms, ph, first, tostring(ok2), err2, coroutine.status(co))
end

-- 6. metatables and OOP: vectors with __add/__eq/__tostring/__index, inheritance
do
  local V = {}
  V.__index = V
  local function vec(x, y) return setmetatable({ x = x, y = y }, V) end
  V.__add = function(a, b) return vec(a.x + b.x, a.y + b.y) end
  V.__eq = function(a, b) return a.x == b.x and a.y == b.y end
  V.__tostring = function(a) return "(" .. a.x .. "," .. a.y .. ")" end
  function V:dot(o) return self.x * o.x + self.y * o.y end
  local acc = vec(0, 0)
  local d = 0
  for i = 1, 3000 * N do
    local v = vec(i % 13, i % 7)
    acc = acc + v
    d = (d + acc:dot(v)) % 1000003
  end
  local Base = {}; Base.__index = Base
  function Base.new(n) return setmetatable({ n = n }, Base) end
  function Base:val() return self.n end
  local Derived = setmetatable({}, { __index = Base }); Derived.__index = Derived
  function Derived.new(n) return setmetatable(Base.new(n), Derived) end
  function Derived:val() return Base.val(self) * 2 end
  local s = 0
  for i = 1, 2000 * N do s = s + (i % 2 == 0 and Derived.new(i) or Base.new(i)):val() end
  emit("metatables", tostring(acc), d, tostring(vec(1, 2) == vec(1, 2)), s)
end

-- 7. errors: pcall/error/xpcall with tables as error objects (longjmp through C frames)
do
  local caught, msgs = 0, 0
  local function risky(i)
    if i % 5 == 0 then error({ code = i }) end
    if i % 7 == 0 then error("bad " .. i, 0) end
    if i % 11 == 0 then local t = nil; return t.x end
    return i
  end
  local total = 0
  for i = 1, 2000 * N do
    local ok, r = pcall(risky, i)
    if ok then total = total + r
    elseif type(r) == "table" then caught = caught + r.code
    elseif r:find("attempt to index a nil value", 1, true) then msgs = msgs + 1
    else msgs = msgs + #r end
  end
  local ok, tb = xpcall(function() return risky(35) end, function(e) return "handled " .. e.code end)
  emit("errors", total, caught, msgs, tostring(ok), tb)
end

return table.concat(out, "\n")
