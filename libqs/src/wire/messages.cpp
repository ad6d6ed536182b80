// Parsing and encoding of qs-pageserver messages (wire/messages.hpp). The
// parsers treat the body as hostile: every read is bounds-checked by the
// reader, every count is bounded by the bytes left, and every message must be
// consumed exactly.
#include "messages.hpp"

namespace qs::wire {
namespace {

void encode_ops(const request& r, writer& w) {
  w.u32(static_cast<std::uint32_t>(r.pages.size()));
  for (const page_op& op : r.pages) {
    w.u8(static_cast<std::uint8_t>(op.kind));
    w.u64(op.page);
    if (op.kind == page_op_kind::put) w.bytes(op.record);
    if (op.kind == page_op_kind::patch) {
      w.u32(static_cast<std::uint32_t>(op.parts.size()));
      for (const part& p : op.parts) {
        w.u32(p.offset);
        w.bytes(p.data);
      }
    }
  }
  w.u32(static_cast<std::uint32_t>(r.metas.size()));
  for (const meta_op& op : r.metas) {
    w.u8(static_cast<std::uint8_t>(op.kind));
    w.bytes(op.key);
    if (op.kind == meta_op_kind::put) w.bytes(op.value);
  }
}

void parse_ops(reader& in, request& r) {
  std::uint32_t np = in.count(9);
  r.pages.reserve(np);
  for (std::uint32_t i = 0; i < np; ++i) {
    page_op op;
    std::uint8_t k = in.u8();
    op.page = in.u64();
    switch (k) {
      case static_cast<std::uint8_t>(page_op_kind::put):
        op.kind = page_op_kind::put;
        op.record = in.bytes(max_record);
        break;
      case static_cast<std::uint8_t>(page_op_kind::patch): {
        op.kind = page_op_kind::patch;
        std::uint32_t nparts = in.count(8);
        if (nparts == 0) throw protocol_error("a page patch with no parts");
        op.parts.reserve(nparts);
        for (std::uint32_t j = 0; j < nparts; ++j) {
          part p;
          p.offset = in.u32();
          p.data = in.bytes(max_record);
          if (p.data.empty() || std::uint64_t{p.offset} + p.data.size() > max_record)
            throw protocol_error("a page patch outside the page record (offset " + std::to_string(p.offset) +
                                 ", " + std::to_string(p.data.size()) + " bytes)");
          op.parts.push_back(p);
        }
        break;
      }
      case static_cast<std::uint8_t>(page_op_kind::remove):
        op.kind = page_op_kind::remove;
        break;
      default:
        throw protocol_error("unknown page operation " + std::to_string(k));
    }
    r.pages.push_back(std::move(op));
  }
  std::uint32_t nm = in.count(5);
  r.metas.reserve(nm);
  for (std::uint32_t i = 0; i < nm; ++i) {
    meta_op op;
    std::uint8_t k = in.u8();
    op.key = in.bytes(max_key);
    if (op.key.empty()) throw protocol_error("an empty metadata key");
    if (k == static_cast<std::uint8_t>(meta_op_kind::put)) {
      op.kind = meta_op_kind::put;
      op.value = in.bytes(max_value);
    } else if (k == static_cast<std::uint8_t>(meta_op_kind::remove)) {
      op.kind = meta_op_kind::remove;
    } else {
      throw protocol_error("unknown metadata operation " + std::to_string(k));
    }
    r.metas.push_back(op);
  }
}

}  // namespace

const char* name_of(msg m) {
  switch (m) {
    case msg::hello: return "hello";
    case msg::begin: return "begin";
    case msg::write: return "write";
    case msg::commit: return "commit";
    case msg::abort: return "abort";
    case msg::read_page: return "read_page";
    case msg::lock_write: return "lock_write";
    case msg::get: return "get";
    case msg::scan: return "scan";
    case msg::allocate: return "allocate";
    case msg::open_index: return "open_index";
    case msg::index_insert: return "index_insert";
    case msg::index_erase: return "index_erase";
    case msg::index_scan: return "index_scan";
    case msg::log_position: return "log_position";
    case msg::ping: return "ping";
    case msg::ok: return "ok";
    case msg::error: return "error";
    case msg::hello_ok: return "hello_ok";
    case msg::page: return "page";
    case msg::value: return "value";
    case msg::entries: return "entries";
    case msg::pages: return "pages";
    case msg::number: return "number";
    case msg::flag: return "flag";
    case msg::pong: return "pong";
  }
  return "unknown";
}

request parse_request(std::span<const std::byte> body) {
  reader in(body);
  request r;
  std::uint8_t t = in.u8();
  r.type = static_cast<msg>(t);
  switch (r.type) {
    case msg::hello:
      r.magic = in.u32();
      r.version = in.u32();
      r.secret = in.bytes(max_secret);
      break;
    case msg::begin:
    case msg::abort:
    case msg::log_position:
      break;
    case msg::write:
      parse_ops(in, r);
      break;
    case msg::commit:
      r.flag = in.u8() != 0;
      parse_ops(in, r);
      break;
    case msg::read_page:
      r.page = in.u64();
      r.flag = in.u8() != 0;
      r.page_version = in.u64();
      break;
    case msg::lock_write:
      r.page = in.u64();
      break;
    case msg::get:
      r.key = in.bytes(max_key);
      break;
    case msg::scan:
      r.key = in.bytes(max_key);
      break;
    case msg::allocate:
      r.n = in.u64();
      if (r.n == 0 || r.n > (std::uint64_t{1} << 32))
        throw protocol_error("allocation of " + std::to_string(r.n) + " pages");
      break;
    case msg::open_index:
      r.name = in.bytes(256);
      r.flag = in.u8() != 0;
      break;
    case msg::index_insert:
    case msg::index_erase:
      r.index = in.u32();
      r.key = in.bytes(max_key);
      r.value = in.bytes(max_value);
      break;
    case msg::index_scan:
      r.index = in.u32();
      r.lo = in.bytes(max_key);
      r.hi = in.bytes(max_key);
      r.flag = in.u8() != 0;
      r.key = in.bytes(max_key);
      r.value = in.bytes(max_value);
      r.limit = in.u32();
      break;
    case msg::ping:
      r.value = in.bytes(max_message);
      r.limit = in.u32();
      if (r.limit > max_record) throw protocol_error("a ping asking for " + std::to_string(r.limit) + " bytes");
      break;
    default:
      throw protocol_error("unknown request type " + std::to_string(t));
  }
  in.done();
  return r;
}

void encode(const request& r, writer& w) {
  w.u8(static_cast<std::uint8_t>(r.type));
  switch (r.type) {
    case msg::hello:
      w.u32(r.magic);
      w.u32(r.version);
      w.bytes(r.secret);
      break;
    case msg::write:
      encode_ops(r, w);
      break;
    case msg::commit:
      w.u8(r.flag);
      encode_ops(r, w);
      break;
    case msg::read_page:
      w.u64(r.page);
      w.u8(r.flag);
      w.u64(r.page_version);
      break;
    case msg::lock_write:
      w.u64(r.page);
      break;
    case msg::get:
    case msg::scan:
      w.bytes(r.key);
      break;
    case msg::allocate:
      w.u64(r.n);
      break;
    case msg::open_index:
      w.bytes(r.name);
      w.u8(r.flag);
      break;
    case msg::index_insert:
    case msg::index_erase:
      w.u32(r.index);
      w.bytes(r.key);
      w.bytes(r.value);
      break;
    case msg::index_scan:
      w.u32(r.index);
      w.bytes(r.lo);
      w.bytes(r.hi);
      w.u8(r.flag);
      w.bytes(r.key);
      w.bytes(r.value);
      w.u32(r.limit);
      break;
    case msg::ping:
      w.bytes(r.value);
      w.u32(r.limit);
      break;
    default:
      break;
  }
}

response parse_response(std::span<const std::byte> body) {
  reader in(body);
  response r;
  std::uint8_t t = in.u8();
  r.type = static_cast<msg>(t);
  switch (r.type) {
    case msg::ok:
      break;
    case msg::error:
      r.code = static_cast<error_code>(in.u32());
      r.text = in.bytes(max_value);
      break;
    case msg::hello_ok:
    case msg::number:
      r.a = in.u64();
      break;
    case msg::page: {
      std::uint8_t s = in.u8();
      if (s > 2) throw protocol_error("unknown page status " + std::to_string(s));
      r.status = static_cast<page_status>(s);
      if (r.status == page_status::record) {
        r.text = in.bytes(max_record);
        r.mapping = in.bytes(max_mapping);
      }
      break;
    }
    case msg::value:
      r.flag = in.u8() != 0;
      if (r.flag) r.text = in.bytes(max_value);
      break;
    case msg::entries: {
      r.flag = in.u8() != 0;
      std::uint32_t n = in.count(8);
      r.entries.reserve(n);
      for (std::uint32_t i = 0; i < n; ++i) {
        std::string_view k = in.bytes(max_key);
        std::string_view v = in.bytes(max_value);
        r.entries.emplace_back(k, v);
      }
      break;
    }
    case msg::pages:
      r.a = in.u64();
      r.b = in.u64();
      break;
    case msg::flag:
      r.flag = in.u8() != 0;
      break;
    case msg::pong:
      r.text = in.bytes(max_message);
      break;
    default:
      throw protocol_error("unknown response type " + std::to_string(t));
  }
  in.done();
  return r;
}

void encode(const response& r, writer& w) {
  w.u8(static_cast<std::uint8_t>(r.type));
  switch (r.type) {
    case msg::error:
      w.u32(static_cast<std::uint32_t>(r.code));
      w.bytes(r.text.substr(0, 4096));
      break;
    case msg::hello_ok:
    case msg::number:
      w.u64(r.a);
      break;
    case msg::page:
      w.u8(static_cast<std::uint8_t>(r.status));
      if (r.status == page_status::record) {
        w.bytes(r.text);
        w.bytes(r.mapping);
      }
      break;
    case msg::value:
      w.u8(r.flag);
      if (r.flag) w.bytes(r.text);
      break;
    case msg::entries:
      w.u8(r.flag);
      w.u32(static_cast<std::uint32_t>(r.entries.size()));
      for (auto& [k, v] : r.entries) {
        w.bytes(k);
        w.bytes(v);
      }
      break;
    case msg::pages:
      w.u64(r.a);
      w.u64(r.b);
      break;
    case msg::flag:
      w.u8(r.flag);
      break;
    case msg::pong:
      w.bytes(r.text);
      break;
    default:
      break;
  }
}

}  // namespace qs::wire
