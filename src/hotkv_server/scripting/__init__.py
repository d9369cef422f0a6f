"""Lua scripting as Redis 7 has it (EVAL and friends, commands/scripting.py).

* ``sandbox.py`` + ``bootstrap.lua``: one Lua 5.1 state (lupa.lua51) set up as Redis's sandbox.
* ``libs.py`` + ``cjson_encode.lua``: cjson, cmsgpack, bit and struct.
* ``convert.py``: reply conversion between the server and Lua, both ways.
* ``engine.py``: the script cache, the script thread, BUSY and SCRIPT KILL.
"""
