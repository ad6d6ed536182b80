// shared_secret.hpp: the secret a server's clients and replication peers
// present: read from its file, and compared.
//
// The file's first line is the secret (trailing blanks and a carriage
// return dropped), 1 to 1024 bytes; the file must be a regular file that
// neither group nor others may read or write. A comparison takes as long
// whatever the first difference.
//
// Thread-safety: both functions are pure; any thread.
#pragma once

#include <string>
#include <string_view>

namespace qs::server {

// Throws qs::error naming the file and what is wrong with it.
std::string read_secret(const std::string& path);

bool same_secret(std::string_view a, std::string_view b);

}  // namespace qs::server
