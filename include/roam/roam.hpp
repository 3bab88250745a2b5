// roam — umbrella header: everything an application needs.
#pragma once

#include <roam/am/buffer.hpp>
#include <roam/am/channel.hpp>
#include <roam/am/collectives.hpp>
#include <roam/am/event.hpp>
#include <roam/am/node_local.hpp>
#include <roam/am/remote_promise.hpp>
#include <roam/am/send.hpp>
#include <roam/base/error.hpp>
#include <roam/checkpoint/checkpoint.hpp>
#include <roam/coll/coll_settings.hpp>
#include <roam/coll/commutative.hpp>
#include <roam/core/config.hpp>
#include <roam/core/runtime.hpp>
#include <roam/lb/policy.hpp>
#include <roam/mobile/lifecycle.hpp>
#include <roam/mobile/mobile_ptr.hpp>
#include <roam/mobile/object_channel.hpp>
#include <roam/mobile/together.hpp>
#include <roam/task/future.hpp>
#include <roam/task/mutex.hpp>
#include <roam/task/tasklet.hpp>
#include <roam/task/this_task.hpp>
#include <roam/trace/trace_settings.hpp>
#include <roam/transport/node_id.hpp>
