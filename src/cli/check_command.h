// check_command.h — `stagemem check`: the CI gate. Does every pipeline stage fit the device?
//
// Exit codes: 0 every stage's peak fits the device, 1 at least one does not (each failing stage
// is printed with its overflow in GiB and bytes and its five largest terms), 2 bad input (no
// device given, or an error naming the field and the allowed values).
#pragma once

#include <string_view>
#include <vector>

int run_check(const std::vector<std::string_view>& args);
