// qs/format/checksum.hpp: CRC-32C, and the checksum of a page record.
//
// A record's checksum covers its header, with the checksum field taken as
// zero, followed by its image (page_record.hpp). The CRC uses the SSE4.2
// instruction when the processor has it, a table otherwise; both give the
// same values.
//
// Thread-safety: pure functions.
#pragma once

#include <qs/format/page_record.hpp>

#include <cstddef>
#include <cstdint>

namespace qs::detail {

// CRC-32C of a buffer, continuing from `crc` (0 to start).
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t n) noexcept;

// The checksum of a record: header (checksum field taken as zero) and image.
std::uint32_t record_checksum(const record_header& h, const std::byte* image, std::size_t n) noexcept;
// Its first part, the header's; crc32c continues it over the image's bytes.
std::uint32_t record_header_checksum(const record_header& h) noexcept;

}  // namespace qs::detail
