// roam — measuring the cost model's α, β and γ over a binding's links (model_probe.cpp).
#pragma once

#include <roam/coll/cost_model.hpp>
#include <roam/coll/detail/links.hpp>

#include <optional>

namespace roam::coll::detail {

/// ROAM_COLL_MODEL="alpha,beta,gamma" (µs, µs per byte, µs per byte), or nothing when it is
/// unset; roam::config_error when it is malformed.
std::optional<cost_model> model_from_environment();

/// The model of `l`: rank 0's ROAM_COLL_MODEL, or measured: α and β from ping-pongs of
/// rank 0 with rank size()/2 (8 bytes, then 256 KiB) over `l` with `tag` (above every
/// algorithm's tags), γ from rank 0 combining 256 KiB of doubles. Rank 0's values reach
/// every rank. Collective over `l`: every rank calls it at the same point of its sequence
/// of calls, and takes part in every transfer whatever its own setting; a malformed
/// setting (its own or rank 0's) is a config_error after them.
cost_model probe_model(links& l, int tag);

}  // namespace roam::coll::detail
