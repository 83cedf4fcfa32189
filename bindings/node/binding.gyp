# The addon: src/addon.cc over libdecree's public API (include/decree),
# linked with the static libdecree.a of the source tree's build/ (made by
# scripts/build.mjs before node-gyp runs), so the .node file needs no
# rpath and no installed libdecree.so; the library's own dependencies
# (libcrypto, libzstd, zlib, jansson, libyaml) are linked dynamically
# from the system.
# decree_top: the source tree (scripts/build.mjs sets DECREE_SOURCE_DIR).
{
  "variables": {
    "decree_top%": "<!(node -p \"process.env.DECREE_SOURCE_DIR || require('path').resolve('../..')\")"
  },
  "targets": [
    {
      "target_name": "decree",
      "sources": ["src/addon.cc"],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<(decree_top)/include"
      ],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED"
      ],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror"],
      "libraries": [
        "<(decree_top)/build/libdecree.a",
        "-Wl,--exclude-libs,ALL",
        "-lcrypto", "-lzstd", "-lz", "-ljansson", "-lyaml", "-lpthread"
      ]
    }
  ]
}
