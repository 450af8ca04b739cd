-- A mixed Lua workload: recursion, closures, tables, strings, sorting. Scale with arg N.
local N = tonumber(os.getenv("LUA_N") or "6")
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local out = {}
out[#out + 1] = "fib " .. fib(27)
local t = {}
local seed = 42
local function rand() seed = (seed * 1103515245 + 12345) % 2147483648 return seed end
for i = 1, 60000 * N do t[i] = rand() % 100000 end
table.sort(t)
out[#out + 1] = "sorted " .. t[1] .. " " .. t[#t // 2] .. " " .. t[#t]
local words = {}
for i = 1, 40000 * N do
  local w = string.format("w%05d", rand() % 5000)
  words[w] = (words[w] or 0) + 1
end
local keys = {}
for k in pairs(words) do keys[#keys + 1] = k end
table.sort(keys, function(a, b) return words[a] > words[b] or (words[a] == words[b] and a < b) end)
out[#out + 1] = "top " .. keys[1] .. "=" .. words[keys[1]]
local s = 0
local adders = {}
for i = 1, 100 do adders[i] = function(x) return x + i end end
for j = 1, 3000 * N do for i = 1, 100 do s = adders[i](s) % 1000003 end end
out[#out + 1] = "closures " .. s
local parts = {}
for i = 1, 20000 * N do parts[#parts + 1] = tostring(i):rep(2) end
local big = table.concat(parts, ",")
local cnt = 0
for _ in big:gmatch("1%d1") do cnt = cnt + 1 end
out[#out + 1] = "gmatch " .. cnt .. " len " .. #big
print(table.concat(out, "\n"))
