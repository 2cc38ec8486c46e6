// Reading measured rows from a TSV file.
#include "sim/calibrate/measure.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include "sim/cost/toml_reader.h"

namespace simcache::sim {
namespace {

constexpr const char* kRequired[] = {"id",     "workload", "shape", "variant",
                                     "metric", "value",    "unit"};
constexpr const char* kKnown[] = {"id",    "workload", "shape", "variant", "metric",
                                  "value", "unit",     "kind",  "source",  "note"};

struct Field {
  std::string text;
  int col;  // 1-based character column
};

std::vector<Field> split_tabs(std::string_view line) {
  std::vector<Field> out;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    const std::string_view f =
        line.substr(start, tab == std::string_view::npos ? tab : tab - start);
    out.push_back({std::string(f), static_cast<int>(start) + 1});
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return out;
}

struct Header {
  std::vector<std::string> names;
  std::map<std::string, size_t> index;
};

bool parse_header(const std::string& file, int line, std::string_view text, Header* h,
                  std::string* error) {
  for (const Field& f : split_tabs(text)) {
    bool known = false;
    for (const char* k : kKnown) known |= f.text == k;
    if (!known) {
      *error = fmt::format(
          "{}:{}:{}: header: unknown column '{}' (expected: id, workload, "
          "shape, variant, metric, value, unit, kind, source, note)",
          file, line, f.col, escape_line(f.text));
      return false;
    }
    if (h->index.count(f.text)) {
      *error =
          fmt::format("{}:{}:{}: header: column '{}' appears twice", file, line, f.col,
                      escape_line(f.text));
      return false;
    }
    h->index[f.text] = h->names.size();
    h->names.push_back(f.text);
  }
  for (const char* k : kRequired) {
    if (!h->index.count(k)) {
      *error = fmt::format("{}:{}:1: header: required column '{}' is missing", file, line, k);
      return false;
    }
  }
  return true;
}

bool parse_row(const Header& h, const std::string& file, int line, std::string_view text,
               MeasuredRow* r, std::string* error) {
  const std::vector<Field> fs = split_tabs(text);
  for (size_t i = 0; i < fs.size() && i < h.names.size(); ++i) {
    if (fs[i].text.size() > kMaxFieldBytes) {
      *error = fmt::format("{}:{}:{}: {}: field of {} bytes is longer than the limit of {}", file,
                           line, fs[i].col, h.names[i], fs[i].text.size(), kMaxFieldBytes);
      return false;
    }
  }
  if (fs.size() > h.names.size()) {
    *error = fmt::format("{}:{}:{}: row has {} fields, the header names {}", file, line,
                         fs[h.names.size()].col, fs.size(), h.names.size());
    return false;
  }
  r->file = file;
  r->line = line;
  std::map<std::string, std::string> v;
  for (size_t i = 0; i < h.names.size(); ++i) {
    const int col = i < fs.size() ? fs[i].col : static_cast<int>(text.size()) + 1;
    r->col[h.names[i]] = col;
    v[h.names[i]] = i < fs.size() ? fs[i].text : "";
  }
  for (const char* k : kRequired) {
    if (v[k].empty()) {
      *error = fmt::format("{}: {}: empty (a required column)", r->where(k), k);
      return false;
    }
  }
  r->id = v["id"], r->workload = v["workload"], r->shape = v["shape"];
  r->variant = v["variant"], r->metric = v["metric"], r->unit = v["unit"];
  r->kind = v["kind"].empty() ? "timing" : v["kind"];
  r->source = v["source"], r->note = v["note"];
  // Negative values (differences) parse; map_rows() leaves them out.
  if (!parse_value(v["value"], &r->value)) {
    *error = fmt::format("{}: value: '{}' is not a number", r->where("value"),
                         escape_line(v["value"]));
    return false;
  }
  return true;
}

}  // namespace

bool parse_value(std::string_view s, double* v) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*v);
}

std::string MeasuredRow::where(const std::string& column) const {
  auto it = col.find(column);
  return fmt::format("{}:{}:{}", file, line, it == col.end() ? 1 : it->second);
}

bool parse_measurements(std::string_view text, const std::string& file,
                        std::vector<MeasuredRow>* out, std::string* error) {
  out->clear();
  Header h;
  bool have_header = false;
  std::map<std::string, int> seen;
  int line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (l.size() > kMaxLineBytes) {
      *error = fmt::format("{}:{}:1: line of {} bytes is longer than the limit of {}", file, line,
                           l.size(), kMaxLineBytes);
      return false;
    }
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.find_first_not_of(" \t") == std::string_view::npos || l.front() == '#') continue;
    if (!have_header) {
      if (!parse_header(file, line, l, &h, error)) return false;
      have_header = true;
      continue;
    }
    MeasuredRow r;
    if (!parse_row(h, file, line, l, &r, error)) return false;
    if (auto [it, fresh] = seen.emplace(r.id, line); !fresh) {
      *error = fmt::format("{}: id: '{}' already used on line {}", r.where("id"), escape_line(r.id),
                           it->second);
      return false;
    }
    if (out->size() >= kMaxRows) {
      *error = fmt::format("{}:{}:1: more than {} measured rows", file, line, kMaxRows);
      return false;
    }
    out->push_back(std::move(r));
  }
  if (!have_header) {
    *error = fmt::format(
        "{}:1:1: no header line (id, workload, shape, variant, metric, value, unit, ...)", file);
    return false;
  }
  if (out->empty()) {
    *error = fmt::format("{}:{}:1: no measured rows", file, line);
    return false;
  }
  return true;
}

bool read_measurements(const std::string& path, std::vector<MeasuredRow>* out, std::string* error) {
  std::string text;
  if (!read_input(path, "the measurements", &text, error))
    return false;
  return parse_measurements(text, escape_line(path), out, error);
}

std::vector<std::string> sitting_files(const std::string& list) {
  std::vector<std::string> files;
  for (size_t at = 0;;) {
    const size_t comma = list.find(',', at);
    files.push_back(list.substr(at, comma == std::string::npos ? comma : comma - at));
    if (comma == std::string::npos) return files;
    at = comma + 1;
  }
}

std::string file_names(const std::string& list) {
  std::string out;
  for (const std::string& one : sitting_files(list))
    out += (out.empty() ? "" : ",") + std::filesystem::path(one).filename().string();
  return out;
}

std::string id_ranges(const std::vector<std::string>& ids) {
  // Splits "SF-197" into ("SF-", 197, width 3); ids without a trailing
  // number stand alone.
  auto split = [](const std::string& id, std::string* pre, long* n, size_t* w) {
    size_t i = id.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(id[i - 1]))) --i;
    if (i == id.size() || id.size() - i > 9) return false;
    *pre = id.substr(0, i);
    *n = std::stol(id.substr(i));
    *w = id.size() - i;
    return true;
  };
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    std::string pre, pre2;
    long n = 0, n2 = 0;
    size_t w = 0, w2 = 0, j = i + 1;
    if (split(ids[i], &pre, &n, &w)) {
      while (j < ids.size() && split(ids[j], &pre2, &n2, &w2) && pre2 == pre &&
             n2 == n + static_cast<long>(j - i))
        ++j;
    }
    out += out.empty() ? "" : ", ";
    out += ids[i];
    if (j - i >= 3)
      out += ".." + ids[j - 1];
    else
      j = i + 1;
    i = j;
  }
  return out;
}

}  // namespace simcache::sim
