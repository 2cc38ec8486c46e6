// A tiny PNG reader for the plot test: 8-bit RGB or RGBA, non-interlaced
// (what headless Chromium's --screenshot writes), inflated with zlib.
// Returns false on anything else, so the test fails rather than guesses.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace simcache::testing {

struct Png {
  uint32_t width = 0, height = 0;
  std::vector<uint32_t> rgb;  // 0xRRGGBB per pixel, row-major
};

inline uint32_t be32(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

inline bool read_png(const std::string& data, Png* out) {
  const auto* d = reinterpret_cast<const unsigned char*>(data.data());
  static const unsigned char sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  if (data.size() < 8 || std::string(data, 0, 8) != std::string(sig, sig + 8)) return false;
  std::string idat;
  uint32_t type = 0, channels = 0;
  for (size_t at = 8; at + 12 <= data.size();) {
    const uint32_t len = be32(d + at);
    const std::string kind(data, at + 4, 4);
    if (at + 12 + len > data.size()) return false;
    const unsigned char* body = d + at + 8;
    if (kind == "IHDR") {
      out->width = be32(body);
      out->height = be32(body + 4);
      type = body[9];
      if (body[8] != 8 || (type != 2 && type != 6) || body[12] != 0) return false;
      channels = type == 2 ? 3 : 4;
    } else if (kind == "IDAT") {
      idat.append(reinterpret_cast<const char*>(body), len);
    } else if (kind == "IEND") {
      break;
    }
    at += 12 + len;
  }
  if (!channels || !out->width || !out->height) return false;
  const size_t stride = size_t{out->width} * channels;
  std::vector<unsigned char> raw((stride + 1) * out->height);
  uLongf n = raw.size();
  if (uncompress(raw.data(), &n, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      n != raw.size())
    return false;
  std::vector<unsigned char> prev(stride, 0), cur(stride);
  out->rgb.resize(size_t{out->width} * out->height);
  for (uint32_t y = 0; y < out->height; ++y) {
    const unsigned char* row = raw.data() + y * (stride + 1);
    const unsigned filter = row[0];
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= channels ? cur[i - channels] : 0, b = prev[i],
                c = i >= channels ? prev[i - channels] : 0;
      int v = row[1 + i];
      switch (filter) {
        case 0: break;
        case 1: v += a; break;
        case 2: v += b; break;
        case 3: v += (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: return false;
      }
      cur[i] = static_cast<unsigned char>(v);
    }
    for (uint32_t x = 0; x < out->width; ++x) {
      const unsigned char* px = cur.data() + size_t{x} * channels;
      out->rgb[size_t{y} * out->width + x] = uint32_t{px[0]} << 16 | uint32_t{px[1]} << 8 | px[2];
    }
    prev.swap(cur);
  }
  return true;
}

}  // namespace simcache::testing
