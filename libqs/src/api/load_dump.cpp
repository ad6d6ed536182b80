// qs::load_dump (qs/inspect.hpp): a dump read into a new database.
//
// The dump's types become descriptors of this process (as qs-evolve makes
// them from a program file); every object is allocated first, in the
// dump's order, in one transaction, so that a pointer to any of them can
// be written; then each object's members are written by name, its
// pointers to the objects they name, and the roots and index entries are
// made. vtable pointers stay zero: a program sets them as its pages come
// in (pager.cpp, fix_vptrs).
#include <qs/inspect.hpp>

#include "api/database_impl.hpp"
#include "mode/page_access.hpp"

#include <qs/format/keys.hpp>
#include <qs/format/members.hpp>
#include <qs/index.hpp>
#include <qs/persistent.hpp>
#include <qs/transaction.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

namespace qs {
namespace {

using json = nlohmann::json;

// A type of the dump, with the storage its descriptor points into.
struct loaded_type {
  std::string name;
  std::vector<detail::stored_member> stored;
  std::vector<member_record> records;
  std::vector<std::uint32_t> pointers;
  std::vector<vptr_entry> vptrs;
  std::string vtable_name;
  type_descriptor d{};
  std::unordered_map<std::string, const detail::stored_member*> by_path;
};

class loader {
 public:
  loader(std::istream& in, const std::string& target, const options& opts, std::uint32_t page_size,
         const inspector::progress& progress)
      : in_(in), target_(target), opts_(opts), page_size_(page_size), progress_(progress) {}

  std::uint64_t run() {
    read_header();
    std::string line;
    while (std::getline(in_, line)) {
      ++line_number_;
      if (line.empty()) continue;
      json j = parse(line);
      if (j.contains("root") || j.contains("index")) {
        tail_.push_back(std::move(j));
      } else if (j.contains("id")) {
        lines_.push_back(std::move(line));
        numbers_.push_back(line_number_);
      } else if (j.contains("type")) {
        add_type(j);
      } else {
        bad("a line that is no type, object, root or index entry");
      }
    }
    if (lines_.size() != objects_expected_)
      throw invalid_argument("dump: the header says " + std::to_string(objects_expected_) + " objects, the dump has " +
                             std::to_string(lines_.size()));
    options o = opts_;
    o.page_size = page_size_;
    database db = database::open(target_, o);
    transaction tx(db);
    addresses_.resize(lines_.size(), nullptr);
    sizes_.resize(lines_.size(), 0);
    for (std::size_t i = 0; i < lines_.size(); ++i) allocate(db, i);
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      fill(i);
      if (progress_ && (i % 4096 == 0 || i + 1 == lines_.size())) progress_(i + 1, lines_.size());
    }
    for (const json& j : tail_) finish(db, j);
    tx.commit();
    return lines_.size();
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw invalid_argument("dump, line " + std::to_string(line_number_) + ": " + what);
  }
  json parse(const std::string& line) const {
    try {
      json j = json::parse(line);
      if (!j.is_object()) bad("not a JSON object");
      return j;
    } catch (const json::exception& e) {
      bad(std::string("not JSON (") + e.what() + ")");
    }
  }
  template <class T>
  T field(const json& j, const char* name) const {
    if (!j.contains(name)) bad(std::string("no \"") + name + "\"");
    try {
      return j.at(name).get<T>();
    } catch (const json::exception& e) {
      bad(std::string("\"") + name + "\" is not what it should be (" + e.what() + ")");
    }
  }

  void read_header() {
    std::string line;
    if (!std::getline(in_, line)) throw invalid_argument("dump: empty");
    line_number_ = 1;
    json h = parse(line);
    if (!h.contains("qs_dump")) bad("the first line is not a qs dump's header");
    if (field<int>(h, "qs_dump") != 1) bad("a dump of version " + h.at("qs_dump").dump() + "; this qs reads version 1");
    const std::string format = field<std::string>(h, "format");
    if (format != detail::page_access::format_name) {
      if (format == detail::format_hardware || format == detail::format_software) {
        const std::string mode = format == detail::format_hardware ? "hardware" : "software";
        throw other_mode(
            "the dump was made in " + mode + " mode; this build loads " + detail::page_access::mode_name + " mode's",
            mode);
      }
      bad("a dump of format '" + format + "'; this qs loads '" + detail::page_access::format_name + "'");
    }
    if (page_size_ == 0) page_size_ = field<std::uint32_t>(h, "page_size");
    objects_expected_ = field<std::uint64_t>(h, "objects");
  }

  void add_type(const json& j) {
    loaded_type& t = types_.emplace_back();
    t.name = field<std::string>(j, "type");
    const auto size = field<std::uint32_t>(j, "size"), align = field<std::uint32_t>(j, "align");
    if (size == 0 || align == 0 || (align & (align - 1))) bad("type " + t.name + " has a bad size or alignment");
    t.pointers = field<std::vector<std::uint32_t>>(j, "pointers");
    std::sort(t.pointers.begin(), t.pointers.end());
    for (std::uint32_t off : t.pointers)
      if (off % 8 || std::uint64_t{off} + 8 > size) bad("type " + t.name + " has a pointer outside it");
    t.vtable_name = "vtable of " + t.name;
    for (std::uint32_t off : field<std::vector<std::uint32_t>>(j, "vptrs")) {
      if (off % 8 || std::uint64_t{off} + 8 > size) bad("type " + t.name + " has a vptr outside it");
      t.vptrs.push_back({off, nullptr, 0, nullptr});
    }
    for (const std::string& m : field<std::vector<std::string>>(j, "members")) {
      try {
        t.stored.push_back(detail::decode_member(m));
      } catch (const error& e) {
        bad("type " + t.name + ": " + e.what());
      }
      if (std::uint64_t{t.stored.back().offset} + t.stored.back().size > size)
        bad("type " + t.name + " has a member outside it");
    }
    for (auto& v : t.vptrs) v.vtable_name = t.vtable_name.c_str();
    for (const auto& m : t.stored) {
      t.records.push_back({m.kind, m.number, m.offset, m.size, m.count, m.element_size, m.first_bit, m.bit_count,
                           m.path.c_str(), m.type.c_str(), m.element.c_str()});
      t.by_path.emplace(m.path, &m);
    }
    t.d = type_descriptor{t.name.c_str(),
                          size,
                          align,
                          t.pointers.empty() ? nullptr : t.pointers.data(),
                          static_cast<std::uint32_t>(t.pointers.size()),
                          t.vptrs.empty() ? nullptr : t.vptrs.data(),
                          static_cast<std::uint32_t>(t.vptrs.size()),
                          t.records.empty() ? nullptr : t.records.data(),
                          static_cast<std::uint32_t>(t.records.size())};
    // Not registered as a program type (detail::note_registered): the
    // descriptor lives only as long as the load, and the new database
    // takes its layout when its first object is allocated.
    if (!by_name_.emplace(t.name, &t).second) bad("type " + t.name + " twice");
  }

  // The descriptor and payload bytes of object i.
  std::pair<const type_descriptor*, std::uint64_t> shape(const json& j) const {
    const std::string type = field<std::string>(j, "type");
    if (type == "qs::pointer") return {detail::pointer_descriptor(), 8 * field<json>(j, "pointers").size()};
    if (type == "qs::raw") return {detail::raw_descriptor(), field<std::string>(j, "bytes").size() / 2};
    auto t = by_name_.find(type);
    if (t == by_name_.end()) bad("an object of type " + type + ", which the dump does not describe");
    const std::uint64_t elems = j.contains("elements") ? field<json>(j, "elements").size() : 1;
    if (elems == 0) bad("an object of no elements");
    return {&t->second->d, elems * t->second->d.size};
  }

  void allocate(database& db, std::size_t i) {
    line_number_ = numbers_[i];
    json j = json::parse(lines_[i]);
    if (field<std::int64_t>(j, "id") != static_cast<std::int64_t>(i))
      bad("object " + j.at("id").dump() + " where object " + std::to_string(i) + " comes next");
    auto [d, bytes] = shape(j);
    addresses_[i] = static_cast<std::byte*>(detail::allocate(db, d, bytes));
    sizes_[i] = bytes;
  }

  // The object's bytes, writable.
  std::byte* writable(std::size_t i) {
#if QS_SOFTWARE_SWIZZLE
    std::uint64_t page;
    std::uint32_t offset, tag;
    detail::sw_identify(addresses_[i], page, offset, tag);
    return static_cast<std::byte*>(detail::sw_write(page, offset, tag));
#else
    return addresses_[i];
#endif
  }

  // A reference's bytes at `at`: null, {"id":N[,"at":K]}, or {"dangling":..} (written null).
  void put_reference(std::byte* at, const json& v) {
    std::byte* target = nullptr;
    if (v.is_object() && v.contains("id")) {
      const auto id = field<std::uint64_t>(v, "id");
      if (id >= addresses_.size()) bad("a pointer to object " + std::to_string(id) + ", which the dump lacks");
      const std::uint64_t at_byte = v.contains("at") ? field<std::uint64_t>(v, "at") : 0;
      if (at_byte > sizes_[id])
        bad("a pointer to byte " + std::to_string(at_byte) + " of object " + std::to_string(id) + ", which has " +
            std::to_string(sizes_[id]));
      target = addresses_[id] + at_byte;
    } else if (!v.is_null() && !(v.is_object() && v.contains("dangling"))) {
      bad("a pointer that is not null, {\"id\":N} or {\"dangling\":...}");
    }
#if QS_SOFTWARE_SWIZZLE
    std::uint64_t page = 0;
    std::uint32_t offset = 0, tag = 0;
    if (target) detail::sw_identify(target, page, offset, tag);
    std::memcpy(at, &page, 8);
    std::memcpy(at + 8, &offset, 4);
    std::memcpy(at + 12, &tag, 4);
#else
    std::memcpy(at, &target, 8);
#endif
  }

  void put_number(std::byte* at, number_kind k, std::uint32_t size, const json& v) {
    if (k == number_kind::floating && (size == 4 || size == 8)) {
      double d;
      if (v.is_string()) {
        const std::string s = v.get<std::string>();
        d = s == "nan" ? NAN : s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : (bad("a number '" + s + "'"), 0.0);
      } else if (v.is_number()) {
        d = v.get<double>();
      } else {
        bad("a floating-point member that is not a number");
      }
      if (size == 4) {
        const float f = static_cast<float>(d);
        std::memcpy(at, &f, 4);
      } else {
        std::memcpy(at, &d, 8);
      }
      return;
    }
    if ((k == number_kind::sint || k == number_kind::uint || k == number_kind::boolean) &&
        (size == 1 || size == 2 || size == 4 || size == 8)) {
      std::uint64_t u = 0;
      if (k == number_kind::boolean && v.is_boolean()) u = v.get<bool>();
      else if (v.is_number_unsigned()) u = v.get<std::uint64_t>();
      else if (v.is_number_integer()) u = static_cast<std::uint64_t>(v.get<std::int64_t>());
      else bad("an integer member that is not an integer");
      std::memcpy(at, &u, size);  // little-endian: the low bytes
      return;
    }
    put_hex(at, size, v);
  }

  void put_hex(std::byte* at, std::uint64_t size, const json& v) {
    if (!v.is_string()) bad("bytes that are not a hexadecimal string");
    const std::string s = v.get<std::string>();
    if (s.size() != size * 2)
      bad("a hexadecimal string of " + std::to_string(s.size()) + " digits for " + std::to_string(size) + " bytes");
    auto digit = [&](char c) -> unsigned {
      if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
      if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
      bad("a hexadecimal string with '" + std::string(1, c) + "'");
    };
    for (std::uint64_t i = 0; i < size; ++i) at[i] = static_cast<std::byte>(digit(s[2 * i]) << 4 | digit(s[2 * i + 1]));
  }

  void put_members(std::byte* elem, const loaded_type& t, const json& members) {
    if (!members.is_object()) bad("members that are not a JSON object");
    for (const auto& [name, v] : members.items()) {
      auto m = t.by_path.find(name);
      if (m == t.by_path.end()) {
        // Software mode: a qs::ref member is written as one reference.
        auto r = t.by_path.find(name.empty() ? "page_" : name + ".page_");
        if (!QS_SOFTWARE_SWIZZLE || r == t.by_path.end()) bad("type " + t.name + " has no member " + name);
        put_reference(elem + r->second->offset, v);
        continue;
      }
      const detail::stored_member& s = *m->second;
      std::byte* at = elem + s.offset;
      const bool pointer = std::binary_search(t.pointers.begin(), t.pointers.end(), s.offset);
      switch (s.kind) {
        case member_kind::pointer:
          if (pointer) put_reference(at, v);
          else put_hex(at, s.size, v);
          break;
        case member_kind::number: put_number(at, s.number, s.size, v); break;
        case member_kind::bits: {
          if (!v.is_number_unsigned() && !v.is_number_integer()) bad("a bit-field that is not a number");
          const std::uint64_t value = v.get<std::uint64_t>();
          for (std::uint32_t b = 0; b < s.bit_count; ++b) {
            const std::uint32_t bit = s.first_bit + b;
            auto byte = static_cast<unsigned>(elem[bit / 8]);
            byte = (value >> b) & 1 ? byte | (1u << (bit % 8)) : byte & ~(1u << (bit % 8));
            elem[bit / 8] = static_cast<std::byte>(byte);
          }
          break;
        }
        case member_kind::array:
          if (v.is_array()) {
            if (v.size() != s.count)
              bad("member " + name + " has " + std::to_string(v.size()) + " elements, not " + std::to_string(s.count));
            for (std::uint32_t k = 0; k < s.count; ++k) {
              std::byte* e = at + std::uint64_t{k} * s.element_size;
              if (pointer && s.element_size == 8) put_reference(e, v[k]);
              else put_number(e, s.number, s.element_size, v[k]);
            }
          } else {
            put_hex(at, s.size, v);
          }
          break;
        default: put_hex(at, s.size, v); break;
      }
    }
  }

  void fill(std::size_t i) {
    line_number_ = numbers_[i];
    json j = json::parse(lines_[i]);
    const std::string type = j.at("type").get<std::string>();
    std::byte* p = writable(i);
    if (type == "qs::pointer") {
      const json& a = j.at("pointers");
      for (std::size_t k = 0; k < a.size(); ++k) put_reference(p + 8 * k, a[k]);
      return;
    }
    if (type == "qs::raw") {
      put_hex(p, j.at("bytes").get<std::string>().size() / 2, j.at("bytes"));
      return;
    }
    const loaded_type& t = *by_name_.at(type);
    if (j.contains("elements")) {
      const json& a = j.at("elements");
      for (std::size_t e = 0; e < a.size(); ++e) put_members(p + e * t.d.size, t, a[e]);
    } else {
      put_members(p, t, field<json>(j, "members"));
    }
  }

  void finish(database& db, const json& j) {
    std::byte* target = nullptr;
    if (j.contains("id") && !j.at("id").is_null()) {
      const auto id = field<std::uint64_t>(j, "id");
      if (id >= addresses_.size()) bad("a root or index entry naming object " + std::to_string(id));
      target = addresses_[id];
    }
    if (j.contains("root")) {
      if (!target) return;  // a root whose cell was lost: nothing to name
      detail::impl_of(db).adopt_root(field<std::string>(j, "root"), target, field<std::string>(j, "type"));
      return;
    }
    const std::string name = field<std::string>(j, "index");
    const bool unique = field<bool>(j, "unique");
    auto ix = indexes_.find(name);
    if (ix == indexes_.end()) ix = indexes_.emplace(name, detail::index_open(db, name, unique)).first;
    std::string key((field<std::string>(j, "key").size()) / 2, '\0');
    put_hex(reinterpret_cast<std::byte*>(key.data()), key.size(), j.at("key"));
    if (!target) return;
    ref<std::byte> r(target);
    std::string value(sizeof r, '\0');
    std::memcpy(value.data(), &r, sizeof r);
    detail::index_insert(db, ix->second, name, key, value);
  }

  std::istream& in_;
  std::string target_;
  options opts_;
  std::uint32_t page_size_;
  const inspector::progress& progress_;
  std::uint64_t line_number_ = 0;
  std::uint64_t objects_expected_ = 0;
  std::deque<loaded_type> types_;
  std::map<std::string, loaded_type*> by_name_;
  std::vector<std::string> lines_;
  std::vector<std::uint64_t> numbers_;  // each object's line in the dump
  std::vector<json> tail_;
  std::vector<std::byte*> addresses_;
  std::vector<std::uint64_t> sizes_;  // each object's payload bytes
  std::map<std::string, std::uint32_t> indexes_;
};

}  // namespace

std::uint64_t load_dump(std::istream& in, const std::string& target, const options& opts, std::uint32_t page_size,
                        const inspector::progress& progress) {
  return loader(in, target, opts, page_size, progress).run();
}

}  // namespace qs
