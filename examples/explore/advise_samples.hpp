// coalesce-explore --advise (advise_samples.cpp).
#pragma once
#include <cstddef>

#include <coalesce/analysis/analysis.hpp>

// Prints (or writes as JSON) the advisor's ranking for the samples' kernels, counted on a sample of
// `particles` standing for a system of `system`; returns the exit status.
int advise_samples(coalesce::analysis::device_model const& model, bool json, std::size_t particles, std::size_t system);
