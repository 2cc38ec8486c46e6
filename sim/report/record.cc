// SHA-256 of inputs (libcrypto's EVP interface) and the typed, resolved
// configuration of the run record.
#include "sim/report/record.h"


#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "sim/io/input.h"

namespace simcache::sim {

namespace {

// Field `name` of the kernel profile column `p` ran on: with columns on
// several kernels, the one of kernel_profiles named p.kernel.
const std::string* field(const RunRecord& rec, const PolicyResult& p, std::string_view name) {
  const std::vector<std::pair<std::string, std::string>>* prof = &rec.kernel_profile;
  for (const auto& k : rec.kernel_profiles)
    for (const auto& [f, v] : k)
      if (f == "name" && v == p.kernel) prof = &k;
  for (const auto& [k, v] : *prof)
    if (k == name) return &v;
  return nullptr;
}

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "true"/"false" as a bool, digits as a number, anything else as text.
nlohmann::ordered_json typed(const std::string& v) {
  if (v == "true") return true;
  if (v == "false") return false;
  if (all_digits(v)) return std::stoll(v);
  return v;
}

// A slab geometry value the allocator computes per cache: each cache
// that saw traffic with its value.
nlohmann::ordered_json per_cache(const PolicyResult& p, uint32_t CacheInfo::*m) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const CacheStats& cs : p.caches) o[cs.info.name.empty() ? cs.name : cs.info.name] = cs.info.*m;
  return o;
}

// The value a `kernel` / `profile` default stood for, or null if `key`
// has none.
nlohmann::ordered_json resolve(const RunRecord& rec, const PolicyResult& p, const std::string& key) {
  auto prof = [&](std::string_view f) -> nlohmann::ordered_json {
    const std::string* v = field(rec, p, f);
    return v ? typed(*v) : nlohmann::ordered_json();
  };
  if (key == "policy.io_alloc_cache_max") return prof("node_cache_max");
  if (key == "policy.futex_cache_max") return prof("futex_cache_max");
  if (key == "policy.waitv_account") {
    const std::string* g = field(rec, p, "waitv_gfp");
    if (!g) return {};
    return g->find("ACCOUNT") != std::string::npos ? "account" : "noaccount";
  }
  if (key == "policy.cqwait_sleep") {
    const std::string* io = field(rec, p, "cqwait_iowait");
    if (!io) return {};
    return *io == "true" ? "io_schedule" : "schedule";
  }
  if (key == "policy.obj_stock_slots") {
    const std::string* s = field(rec, p, "memcg_shape");
    if (!s) return {};
    return *s == "v7_1" ? 5 : 1;  // NR_OBJ_STOCK on 7.1+, one stock before
  }
  if (key == "policy.slab_sheaf_capacity") return per_cache(p, &CacheInfo::sheaf_capacity);
  if (key == "policy.slab_min_partial") return per_cache(p, &CacheInfo::min_partial);
  if (key == "policy.slab_cpu_partial") return per_cache(p, &CacheInfo::cpu_partial);
  return {};
}

nlohmann::ordered_json typed_value(const RunRecord& rec, const PolicyResult& p,
                                   const std::string& key, const std::string& v) {
  if (v == "kernel" || v == "profile") {
    nlohmann::ordered_json r = resolve(rec, p, key);
    if (!r.is_null()) return r;
  }
  if (key.rfind("policy.", 0) == 0) {
    if (const iou::PolicyFieldInfo* f = iou::policy_field_by_name(key.substr(7))) {
      if (f->kind == iou::FieldKind::boolean) return v == "true";
      if (f->kind == iou::FieldKind::unsigned_int && all_digits(v)) return std::stoll(v);
      return v;
    }
  }
  return typed(v);
}

}  // namespace

// OpenSSL's SHA-256 context.
struct Sha256::Impl {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  Impl() { EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr); }
  ~Impl() { EVP_MD_CTX_free(ctx); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};
Sha256::Sha256() : d_(std::make_unique<Impl>()) {}
Sha256::~Sha256() = default;
void Sha256::add(std::string_view bytes) { EVP_DigestUpdate(d_->ctx, bytes.data(), bytes.size()); }
std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(d_->ctx, md, &len);
  std::string out;
  for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", md[i]);
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 d;
  d.add(bytes);
  return d.hex();
}

std::string sha256_source(InputSource& src, std::string* error) {
  Sha256 d;
  char buf[65536];
  for (uint64_t off = 0;;) {
    const long n = src.read_at(off, buf, sizeof buf);
    if (n < 0)
      return *error = fmt::format("{}: cannot read {}: {}", src.name(), src.what(),
                                  std::strerror(errno)),
             "";
    if (n == 0) break;
    d.add(std::string_view(buf, static_cast<size_t>(n)));
    off += static_cast<uint64_t>(n);
  }
  return d.hex();
}

std::string sha256_file(const std::string& path, std::string_view what, std::string* error) {
  if (InputSource::is_pipe_path(path)) return *error = "a pipe, read once by the run", "";
  const auto src = InputSource::open(path, what, error, /*reread=*/false);
  return src ? sha256_source(*src, error) : "";
}

void record_input(RunRecord* r, std::string role, const std::string& path,
                  const std::string& shown, std::string_view sha256) {
  std::string error;
  std::string hash = sha256.empty() ? sha256_file(path, role, &error) : std::string(sha256);
  std::string note = hash.empty() ? error : "";
  r->inputs.push_back({std::move(role), shown.empty() ? path : shown, std::move(hash), std::move(note)});
}

std::string shell_command(const std::vector<std::string>& args) {
  std::string cmd = "simcache";
  for (const std::string& a : args) {
    const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " " + (plain ? a : q + "'");
  }
  return cmd;
}

nlohmann::ordered_json typed_config(const RunRecord& rec, const PolicyResult& p) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const auto& [k, v] : p.config) o[k] = typed_value(rec, p, k, v);
  return o;
}

nlohmann::ordered_json typed_kernel_profile(const RunRecord& rec) {
  return typed_kernel_profile(rec.kernel_profile);
}

nlohmann::ordered_json typed_kernel_profile(
    const std::vector<std::pair<std::string, std::string>>& profile) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  const auto fields = iou::kernel_profile_fields();
  for (const auto& [k, v] : profile) {
    o[k] = v;  // "name", gfp flags, generations: names
    for (const iou::KernelFieldInfo& f : fields)
      if (f.name == k && (f.type == iou::KernelFieldType::boolean ||
                          f.type == iou::KernelFieldType::u32))
        o[k] = typed(v);
  }
  return o;
}

std::vector<std::pair<std::string, std::string>> resolved_config(const RunRecord& rec,
                                                                  const PolicyResult& p) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : p.config) {
    const nlohmann::ordered_json t = typed_value(rec, p, k, v);
    out.emplace_back(k, t.is_string() ? t.get<std::string>() : t.dump());
  }
  return out;
}

}  // namespace simcache::sim
