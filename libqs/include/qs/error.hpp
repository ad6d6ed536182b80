// qs/error.hpp: the exceptions qs throws, every one derived from qs::error.
//
// Defined in common/qs/base/error.hpp, which says what each one means and
// what a program may do after it: the runtime and qs-pageserver throw the
// same types, and the libraries they share (common/) throw them too.
//
// Thread-safety: exception types; nothing shared.
#pragma once

#include <qs/base/error.hpp>
