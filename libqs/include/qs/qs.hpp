// qs/qs.hpp: everything a program that uses qs includes.
//
// qs is a persistent heap for C++ in the style of QuickStore: objects
// allocated with `new (db) T` and linked by ordinary pointers outlive the
// process, under ACID transactions. See README.md for a tour.
#pragma once

#include <qs/btree.hpp>
#include <qs/database.hpp>
#include <qs/error.hpp>
#include <qs/index.hpp>
#include <qs/persistent.hpp>
#include <qs/prefault.hpp>
#include <qs/ref.hpp>
#include <qs/schema.hpp>
#include <qs/transaction.hpp>
