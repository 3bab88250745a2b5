#pragma once
// roam's heterogeneous framework (thesis Chapter 5): the device API, kernels written once,
// coherent multi-device objects and device tasks. Stands alone: link roam::hetero.
#include "roam/hetero/device.hpp"
#include "roam/hetero/hetero_future.hpp"
#include "roam/hetero/hetero_object.hpp"
#include "roam/hetero/hetero_runtime.hpp"
#include "roam/hetero/hetero_task.hpp"
#include "roam/hetero/kernel.hpp"
#include "roam/hetero/scheduler.hpp"
