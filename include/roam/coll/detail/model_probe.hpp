// roam — measuring the cost model's α, β, γ and o over a binding's links (model_probe.cpp).
#pragma once

#include <roam/coll/cost_model.hpp>
#include <roam/coll/detail/links.hpp>

#include <optional>
#include <string>

namespace roam::coll::detail {

/// "alpha,beta,gamma[,overhead]" (µs, µs per byte, µs per byte, µs; the overhead defaults
/// to cost_model's) as a model; roam::config_error naming `what` when it is malformed.
cost_model parse_cost_model(const std::string& text, const std::string& what);

/// ROAM_COLL_MODEL (parse_cost_model's form), or nothing when it is unset;
/// roam::config_error when it is malformed.
std::optional<cost_model> model_from_environment();

/// The model of `l`: rank 0's ROAM_COLL_MODEL, or measured: α and β from ping-pongs of
/// rank 0 with rank size()/2 (8 bytes, then 256 KiB) over `l` with tags tag ... tag + 15
/// (above every algorithm's tags), o from the same ping-pong with 16 messages of 8 bytes out and
/// one back, γ from rank 0 combining 256 KiB of doubles. Rank 0's values reach every rank.
/// Collective over `l`: every rank calls it at the same point of its sequence of calls, and takes
/// part in every transfer whatever its own setting; a malformed setting (its own or rank 0's) is a
/// config_error after them.
cost_model probe_model(links& l, int tag);

}  // namespace roam::coll::detail
