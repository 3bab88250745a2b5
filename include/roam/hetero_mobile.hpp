#pragma once
// roam with its heterogeneous framework inside mobile objects (thesis §5.2): link roam::roam,
// roam::hetero and roam::hetero_mobile (CMake target roam::hetero_mobile brings all three).
//
// - A mobile object may hold hetero_object members: its handlers submit hetero tasks on them,
//   and a migration packs the device data after the object's tasks finished
//   (hetero_object_serialization.hpp).
// - Messages may carry hetero objects as arguments; the receiver's framework picks the device.
// - Global pointers give one-sided put/get on a node's device data (global_hetero_ptr.hpp).
// - Waiting for device work inside a handler suspends it; its worker runs other work
//   (detail/fiber_waits.hpp).
// - Large roam::buffer blocks are page-locked once a CUDA device is in use, so a buffer is the
//   host side of a device transfer without a staging copy (detail/locked_message_blocks.hpp).
// Create one hetero_runtime per process (before roam::run, or inside it on every node's
// application thread before the first task) and keep it alive until roam::run returns.
#include <roam/hetero.hpp>
#include <roam/hetero_mobile/detail/locked_message_blocks.hpp>
#include <roam/hetero_mobile/detail/owned_buffers.hpp>
#include <roam/hetero_mobile/global_hetero_ptr.hpp>
#include <roam/hetero_mobile/hetero_object_serialization.hpp>
#include <roam/roam.hpp>
