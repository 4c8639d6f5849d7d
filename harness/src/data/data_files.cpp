// Data files: torch.save'd dicts through LibTorch's pickle loader, NumPy .npz through a small zip
// and .npy reader (stored entries; deflated ones with zlib), and the checks that turn their
// tensors into a scenario's global data set.
#include "distmetrics/harness/data_files.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>

#ifdef DISTMETRICS_HAVE_ZLIB
#include <zlib.h>
#endif

#include "distmetrics/harness/scenario_python.h"
#include "distmetrics/runtime/comm.h"
#include "distmetrics/runtime/text.h"

namespace distmetrics::harness {
namespace {

// Far above what kMaxElements allows in numbers, so that a file is refused before it is read whole.
constexpr std::int64_t kMaxFileBytes = std::int64_t{1} << 30;
constexpr std::int64_t kMaxElements = 20'000'000;  // as scenario_validation.h: a data set's numbers

std::string ends_with_text(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(dot);
}

std::vector<char> read_bytes(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw DataFileError("no such file: " + path);
  if (!S_ISREG(st.st_mode)) throw DataFileError(path + " is not a regular file");
  if (st.st_size > kMaxFileBytes)
    throw DataFileError(path + " holds " + std::to_string(st.st_size) + " bytes (limit " + std::to_string(kMaxFileBytes) +
                        "): use a smaller data set");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataFileError("cannot read " + path + ": " + std::strerror(errno));
  std::vector<char> bytes(static_cast<std::size_t>(st.st_size));
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (in.gcount() != static_cast<std::streamsize>(bytes.size())) throw DataFileError("cannot read all of " + path);
  return bytes;
}

// --- .pt: torch.save of a dict ----------------------------------------------------------------

TensorMap read_pt(const std::string& path) {
  const auto bytes = read_bytes(path);
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw DataFileError(path + " is not readable as tensors saved with torch.save: " + runtime::first_line(runtime::error_message(e)) +
                        " (save a dict of tensors: torch.save({\"input\": x, \"target\": y}, path))");
  }
  if (!value.isGenericDict())
    throw DataFileError(path + " holds a " + value.tagKind() + ", not a dict: save {\"input\": ..., \"target\": ..., \"weight\": ...}");
  TensorMap out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString()) throw DataFileError(path + ": the dict's keys must be strings ('input', 'target', 'weight')");
    const std::string key = entry.key().toStringRef();
    if (!entry.value().isTensor())
      throw DataFileError(path + ": '" + key + "' is a " + entry.value().tagKind() + ", not a tensor (convert it with torch.as_tensor)");
    out[key] = entry.value().toTensor();
  }
  return out;
}

// --- .npz: a zip of .npy files ----------------------------------------------------------------

std::uint32_t le32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::uint16_t le16(const char* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
std::uint64_t le64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

struct ZipEntry {
  std::string name;
  std::uint16_t method = 0;
  std::uint64_t compressed = 0, size = 0, local_offset = 0;
};

std::vector<ZipEntry> zip_entries(const std::vector<char>& z, const std::string& path) {
  auto bad = [&path](const std::string& what) { return DataFileError(path + " is not a readable .npz (zip) file: " + what); };
  if (z.size() < 22) throw bad("too short");
  // The end-of-central-directory record: the last one, within the comment's reach of the end.
  std::size_t eocd = std::string::npos;
  for (std::size_t i = z.size() - 22 + 1; i-- > 0 && z.size() - i <= 22 + 65535;) {
    if (le32(&z[i]) == 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd == std::string::npos) throw bad("no end of central directory");
  std::uint64_t count = le16(&z[eocd + 10]);
  std::uint64_t cd_offset = le32(&z[eocd + 16]);
  // Zip64: its locator sits just before the record.
  if ((count == 0xFFFF || cd_offset == 0xFFFFFFFF) && eocd >= 20 && le32(&z[eocd - 20]) == 0x07064b50) {
    const std::uint64_t at = le64(&z[eocd - 20 + 8]);
    if (at + 56 > z.size() || le32(&z[at]) != 0x06064b50) throw bad("a broken zip64 record");
    count = le64(&z[at + 32]);
    cd_offset = le64(&z[at + 48]);
  }
  std::vector<ZipEntry> entries;
  std::uint64_t at = cd_offset;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (at + 46 > z.size() || le32(&z[at]) != 0x02014b50) throw bad("a broken central directory");
    ZipEntry e;
    e.method = le16(&z[at + 10]);
    e.compressed = le32(&z[at + 20]);
    e.size = le32(&z[at + 24]);
    const std::uint16_t name_len = le16(&z[at + 28]), extra_len = le16(&z[at + 30]), comment_len = le16(&z[at + 32]);
    e.local_offset = le32(&z[at + 42]);
    if (at + 46 + name_len + extra_len > z.size()) throw bad("a broken central directory");
    e.name.assign(&z[at + 46], name_len);
    // Zip64 extra field: the 64-bit values of the fields that read 0xFFFFFFFF, in order.
    for (std::uint64_t x = at + 46 + name_len; x + 4 <= at + 46 + name_len + extra_len;) {
      const std::uint16_t id = le16(&z[x]), len = le16(&z[x + 2]);
      if (id == 0x0001) {
        std::uint64_t f = x + 4;
        auto take = [&](std::uint64_t& field) {
          if (field == 0xFFFFFFFF && f + 8 <= x + 4 + len && f + 8 <= z.size()) {
            field = le64(&z[f]);
            f += 8;
          }
        };
        take(e.size);
        take(e.compressed);
        take(e.local_offset);
      }
      x += 4 + len;
    }
    entries.push_back(e);
    at += 46 + name_len + extra_len + comment_len;
  }
  return entries;
}

std::string zip_member(const std::vector<char>& z, const ZipEntry& e, const std::string& path) {
  auto bad = [&](const std::string& what) { return DataFileError(path + ": entry '" + e.name + "': " + what); };
  if (e.local_offset + 30 > z.size() || le32(&z[e.local_offset]) != 0x04034b50) throw bad("a broken local header");
  const std::uint64_t data = e.local_offset + 30 + le16(&z[e.local_offset + 26]) + le16(&z[e.local_offset + 28]);
  if (data + e.compressed > z.size()) throw bad("runs past the end of the file");
  if (e.size > static_cast<std::uint64_t>(kMaxFileBytes)) throw bad("too large");
  if (e.method == 0) return std::string(&z[data], e.compressed);
  if (e.method != 8) throw bad("compression method " + std::to_string(e.method) + " is not supported: save with np.savez");
#ifdef DISTMETRICS_HAVE_ZLIB
  std::string out(e.size, '\0');
  z_stream s{};
  if (inflateInit2(&s, -MAX_WBITS) != Z_OK) throw bad("zlib failed to start");
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(&z[data]));
  s.avail_in = static_cast<uInt>(e.compressed);
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&s, Z_FINISH);
  const auto produced = s.total_out;
  inflateEnd(&s);
  if (rc != Z_STREAM_END || produced != e.size) throw bad("its deflated data are broken");
  return out;
#else
  throw bad("it is compressed (np.savez_compressed) and this distmetrics was built without zlib: save with np.savez");
#endif
}

// A .npy array (format versions 1 to 3): its dtype, shape and order from the header dict.
at::Tensor parse_npy(const std::string& npy, const std::string& where) {
  auto bad = [&](const std::string& what) { return DataFileError(where + ": " + what); };
  if (npy.size() < 10 || npy.compare(0, 6, "\x93NUMPY") != 0) throw bad("not a .npy array");
  const int major = static_cast<unsigned char>(npy[6]);
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = le16(&npy[8]);
    start = 10;
  } else if ((major == 2 || major == 3) && npy.size() >= 12) {
    header_len = le32(&npy[8]);
    start = 12;
  } else {
    throw bad(".npy format version " + std::to_string(major) + " is not supported");
  }
  if (start + header_len > npy.size()) throw bad("a broken .npy header");
  const std::string header = npy.substr(start, header_len);
  std::smatch m;
  static const std::regex descr_re("'descr'\\s*:\\s*'([^']*)'");
  static const std::regex order_re("'fortran_order'\\s*:\\s*(True|False)");
  static const std::regex shape_re("'shape'\\s*:\\s*\\(([^)]*)\\)");
  if (!std::regex_search(header, m, descr_re)) throw bad("a .npy header without 'descr'");
  const std::string descr = m[1];
  if (!std::regex_search(header, m, order_re)) throw bad("a .npy header without 'fortran_order'");
  const bool fortran = m[1] == "True";
  if (!std::regex_search(header, m, shape_re)) throw bad("a .npy header without 'shape'");
  std::vector<std::int64_t> shape;
  {
    std::stringstream dims(m[1].str());
    for (std::string d; std::getline(dims, d, ',');) {
      if (d.find_first_not_of(" ") == std::string::npos) continue;
      try {
        shape.push_back(std::stoll(d));
      } catch (const std::exception&) {
        throw bad("a .npy shape that is not a list of sizes: (" + m[1].str() + ")");
      }
      if (shape.back() < 0) throw bad("a negative size in the .npy shape");
    }
  }
  static const std::map<std::string, at::ScalarType> types = {
      {"f4", at::kFloat}, {"f8", at::kDouble}, {"f2", at::kHalf},  {"i8", at::kLong}, {"i4", at::kInt},
      {"i2", at::kShort}, {"i1", at::kChar},   {"u1", at::kByte},  {"b1", at::kBool}};
  const char order = descr.empty() ? '?' : descr[0];
  const auto type = descr.size() > 1 ? types.find(descr.substr(1)) : types.end();
  if (type == types.end() || !(order == '<' || order == '|' || order == '='))
    throw bad("dtype '" + descr + "' is not supported (numbers only, little-endian: float16/32/64, int8/16/32/64, uint8, bool)");
  std::int64_t count = 1;
  for (auto d : shape) {
    if (d > 0 && count > kMaxElements / d) throw bad("more than " + std::to_string(kMaxElements) + " numbers");
    count *= d;
  }
  const std::size_t bytes = static_cast<std::size_t>(count) * c10::elementSize(type->second);
  const std::size_t data = start + header_len;
  if (npy.size() - data < bytes) throw bad("holds fewer bytes than its shape needs");
  std::vector<std::int64_t> stored = shape;
  if (fortran) std::reverse(stored.begin(), stored.end());
  at::Tensor t = at::empty(stored, at::TensorOptions().dtype(type->second));
  if (bytes) std::memcpy(t.data_ptr(), npy.data() + data, bytes);
  if (fortran && shape.size() > 1) {
    std::vector<std::int64_t> reversed(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i) reversed[i] = static_cast<std::int64_t>(shape.size() - 1 - i);
    t = t.permute(reversed).contiguous();
  }
  return t;
}

TensorMap read_npz(const std::string& path) {
  const auto bytes = read_bytes(path);
  TensorMap out;
  for (const auto& e : zip_entries(bytes, path)) {
    std::string key = e.name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    out[key] = parse_npy(zip_member(bytes, e, path), path + ": '" + key + "'");
  }
  return out;
}

std::string shape_text(const at::Tensor& t) {
  std::ostringstream out;
  out << runtime::dtype_name(t.scalar_type()) << " [";
  for (std::size_t i = 0; i < t.sizes().size(); ++i) out << (i ? ", " : "") << t.sizes()[i];
  out << "]";
  return out.str();
}

}  // namespace

TensorMap read_tensor_file(const std::string& path) {
  const std::string ext = ends_with_text(path);
  if (ext == ".pt" || ext == ".pth") return read_pt(path);
  if (ext == ".npz") return read_npz(path);
  throw DataFileError("'" + path + "' must end in .pt (torch.save of a dict of tensors) or .npz (np.savez)");
}

void write_tensor_file(const std::string& path, const TensorMap& tensors) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  for (const auto& [key, tensor] : tensors) dict.insert(key, tensor);
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(dict));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw DataFileError("cannot write " + path + ": " + std::strerror(errno));
}

Dataset dataset_from_tensors(const TensorMap& tensors, const std::string& dtype, std::int64_t num_samples,
                             const std::string& what) {
  static const std::vector<std::string> keys = {"input", "target", "weight"};
  for (const auto& [key, tensor] : tensors) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw DataFileError(what + " has '" + key + "', which is not a data key" + runtime::did_you_mean(key, keys) +
                          " (known: " + runtime::quoted_list(keys) + ")");
  }
  const auto input = tensors.find("input");
  if (input == tensors.end())
    throw DataFileError(what + " has no 'input' (it has " + (tensors.empty() ? std::string("nothing") : [&] {
                          std::vector<std::string> have;
                          for (const auto& [key, t] : tensors) have.push_back(key);
                          return runtime::quoted_list(have);
                        }()) + "): give 'input' (rows are samples), and 'target' and 'weight' if the metric takes them");
  std::int64_t rows = -1, elements = 0;
  Dataset data;
  const at::ScalarType floats = dtype == "float64" ? at::kDouble : at::kFloat;
  for (const auto& key : keys) {
    const auto it = tensors.find(key);
    if (it == tensors.end()) continue;
    at::Tensor t = it->second;
    if (!t.defined()) throw DataFileError(what + ": '" + key + "' is an undefined tensor");
    if (t.dim() == 0) throw DataFileError(what + ": '" + key + "' is a scalar (" + shape_text(t) + "); rows are samples: give at least one dimension");
    if (key == "weight" && t.dim() != 1)
      throw DataFileError(what + ": 'weight' is " + shape_text(t) + "; it must be one number per sample, shaped [N]");
    if (t.is_complex() || !(at::isFloatingType(t.scalar_type()) || at::isIntegralType(t.scalar_type(), /*includeBool=*/true)))
      throw DataFileError(what + ": '" + key + "' is " + shape_text(t) + "; give real numbers");
    if (rows < 0) {
      rows = t.size(0);
    } else if (t.size(0) != rows) {
      throw DataFileError(what + ": '" + key + "' is " + shape_text(t) + " but 'input' has " + std::to_string(rows) +
                          " rows; every tensor needs one row per sample");
    }
    elements += t.numel();
    if (elements > kMaxElements)
      throw DataFileError(what + " holds more than " + std::to_string(kMaxElements) + " numbers: use a smaller data set");
    t = t.to(at::kCPU).to(at::isFloatingType(t.scalar_type()) ? floats : at::kLong).contiguous();
    (key == "input" ? data.input : key == "target" ? data.target : data.weight) = t;
  }
  if (num_samples >= 0) {
    if (num_samples > rows)
      throw DataFileError(what + " has " + std::to_string(rows) + " samples, fewer than data.num_samples = " +
                          std::to_string(num_samples) + " (leave num_samples out to use them all)");
    if (num_samples < rows) {
      data.input = data.input.narrow(0, 0, num_samples).contiguous();
      if (data.target.defined()) data.target = data.target.narrow(0, 0, num_samples).contiguous();
      if (data.weight.defined()) data.weight = data.weight.narrow(0, 0, num_samples).contiguous();
    }
  }
  data.sort_key = label_sort_keys(data, data.input.size(0));
  return data;
}

Dataset load_data_file(const DataSpec& spec) {
  struct stat st {};
  const bool found = ::stat(spec.file.c_str(), &st) == 0;
  std::ostringstream key;
  key << spec.file << '\n' << spec.dtype << '\n' << spec.num_samples << '\n';
  if (found) key << st.st_size << '\n' << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec;
  static std::mutex mutex;
  static std::map<std::string, Dataset> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key.str()); it != cache.end()) return it->second;
  const std::string what = spec.python.empty() ? "file '" + spec.file + "'" : "what " + spec.python + " returned";
  Dataset data = dataset_from_tensors(read_tensor_file(spec.file), spec.dtype, spec.num_samples, what);
  if (found) cache.emplace(key.str(), data);
  return data;
}

namespace {

// The folder of this process's generated data files, removed (with them) when it exits.
struct GeneratedFolder {
  std::string path;
  std::vector<std::string> files;
  void remove() {
    for (const auto& f : files) ::unlink(f.c_str());
    if (!path.empty()) ::rmdir(path.c_str());
    files.clear();
    path.clear();
  }
  ~GeneratedFolder() { remove(); }
};

GeneratedFolder& generated_folder(bool create = false) {
  static GeneratedFolder folder;
  if (create && folder.path.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/distmetrics-data-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw DataFileError("cannot make a temporary folder " + pattern + ": " + std::strerror(errno));
    folder.path = pattern;
  }
  return folder;
}

std::mutex& generated_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

void remove_generated_data_files() {
  std::lock_guard<std::mutex> lock(generated_mutex());
  generated_folder().remove();
}

void materialize_python_data(DataSpec& spec, bool builtin) {
  if (const std::string why = builtin ? builtin_python_unavailable() : scenario_python_unavailable(); !why.empty())
    throw DataFileError(why);
  // Called once per process for the same generator, seed, parameters and sizes.
  auto& mutex = generated_mutex();
  struct Made {
    std::string file;
    std::int64_t samples;
    bool structured;
  };
  static std::map<std::string, Made> made;
  const std::string key = spec.to_json().dump();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = made.find(key); it != made.end()) {
      spec.file = it->second.file;
      spec.num_samples = it->second.samples;
      spec.structured = it->second.structured;
      return;
    }
  }
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto& folder = generated_folder(true);
    path = folder.path + "/" + std::to_string(folder.files.size()) + ".pt";
    folder.files.push_back(path);  // removed with the folder, whatever the generator left there
  }
  ScenarioPython::Generated generated;
  try {
    generated = scenario_python().generate(spec.python, spec.seed, spec.params, path, spec.num_samples);
  } catch (const std::exception& e) {
    throw DataFileError(spec.python + ": " + runtime::error_message(e));
  }
  std::int64_t rows = generated.structured_rows;
  if (rows < 0) {
    const Dataset data = dataset_from_tensors(generated.tensors, spec.dtype, spec.num_samples, "what " + spec.python + " returned");
    TensorMap kept = {{"input", data.input}};
    if (data.target.defined()) kept["target"] = data.target;
    if (data.weight.defined()) kept["weight"] = data.weight;
    write_tensor_file(path, kept);
    rows = data.size();
  }
  std::lock_guard<std::mutex> lock(mutex);
  made[key] = {path, rows, generated.structured_rows >= 0};
  spec.file = path;
  spec.structured = generated.structured_rows >= 0;
  spec.num_samples = rows;
}

}  // namespace distmetrics::harness
