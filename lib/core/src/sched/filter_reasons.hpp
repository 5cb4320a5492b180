// filter_reasons.hpp — why a node does not fit: HAMi's reason constants and
// the "<count>/<devices> <Reason>" text Fit builds from their counts.
#ifndef DEVSHARE_SRC_FILTER_REASONS_HPP_
#define DEVSHARE_SRC_FILTER_REASONS_HPP_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace devshare::internal {

enum Reason : std::size_t {
  kCardNotHealth,
  kCardCordoned,
  kCardTypeMismatch,
  kNumaNotFit,
  kCardUuidMismatch,
  kCardTimeSlicingExhausted,
  kExclusiveDeviceAllocateConflict,
  kResourceQuotaNotFit,
  kCardInsufficientMemory,
  kCardInsufficientCore,
  kCardComputeUnitsExhausted,
  kCardMigTopologyInfeasible,
  kAllocatedCardsInsufficientRequest,
  kReasonCount,
};

constexpr std::array<std::string_view, kReasonCount> kReasonNames = {
    "CardNotHealth",
    "CardCordoned",
    "CardTypeMismatch",
    "NumaNotFit",
    "CardUuidMismatch",
    "CardTimeSlicingExhausted",
    "ExclusiveDeviceAllocateConflict",
    "ResourceQuotaNotFit",
    "CardInsufficientMemory",
    "CardInsufficientCore",
    "CardComputeUnitsExhausted",
    "CardMigTopologyInfeasible",
    "AllocatedCardsInsufficientRequest",
};

using ReasonCounts = std::array<std::int32_t, kReasonCount>;

// "<count>/<devices> <Reason>" pieces sorted as whole strings, joined by
// ", " (HAMi's GenReason).
std::string GenReason(const ReasonCounts& counts, std::size_t devices);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_FILTER_REASONS_HPP_
