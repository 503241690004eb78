#pragma once
// `rocebench agent`: starts ranks on this host for a launcher on another, as a launcher's daemon does
// (Slurm's slurmd, Open MPI's orted), but minimal. One TCP connection carries one request (the
// agent token, argv, the variables to add), framed as the rendezvous frames its messages (wire.hpp);
// the agent runs the child in a process group of its own, sends back its stdout and stderr as they
// come and its exit status when it ends. The connection is the child's lifeline: when it drops (the
// launcher or its relay died, or went silent), the agent stops the group, SIGTERM then SIGKILL.
// The launcher's side is a relay (`rocebench agent --run`), a local process the launcher manages as
// it manages a local rank, which ends as the remote child ended.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "launch.hpp"

namespace rocebench {

// The shared secret both sides hold: the file's first line when `token_file` is given, else
// ROCEBENCH_AGENT_TOKEN. Throws InputError when there is none (or it is empty).
std::string agent_token(const std::string& token_file);

// "ADDRESS:PORT" ("[::1]:7000" for IPv6). Throws UsageError naming `flag`.
RendezvousAddress parse_agent_address(const std::string& flag, const std::string& text);

// The relay's argv for a rank on `host` (which has an agent port): `self agent --run ADDRESS:PORT
// --env NAME… [--carry DIR] -- argv…`. The relay sends the named variables' values from its environment;
// values never appear on a command line, where `ps` would show them.
std::vector<std::string> agent_relay_argv(const std::string& self, const EmulatedHost& host,
                                          const std::vector<std::string>& env_names, const std::vector<std::string>& argv,
                                          const std::string& carry = "");

class Agent {
 public:
  using Log = std::function<void(const std::string&)>;
  // Listens on address:port (0: any free port); throws InfraError when it cannot.
  Agent(const std::string& address, int port, std::string token, Log log);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;
  int port() const { return port_; }
  // Serves requests, each on a thread of its own, until `stop` returns true (looked at every 100 ms);
  // then stops every child still running (SIGTERM, SIGKILL after the grace) and returns.
  void serve(const std::function<bool()>& stop);

 private:
  struct Session;
  void run_session(Session& s);
  std::string token_;
  Log log_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
};

// The relay: has the agent at `agent` run argv with `env`, copies the child's stdout and stderr to
// out_fd and err_fd, and returns the child's exit status as waitpid gives it. With `carry` (a folder
// here), the folder travels with the command: its files go to a folder of the agent's own, argv's words
// that name `carry` (or a path under it) name that one, and what the command changed or made there
// comes back into `carry` before the exit status (a rank 0 on another host: its plan out, its results
// back). Throws InputError when the agent refuses the request, InfraError when it cannot be reached or
// the connection is lost.
int run_through_agent(const RendezvousAddress& agent, const std::string& token, const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env, int out_fd, int err_fd, const std::string& carry = "");

// How long a child has to end after SIGTERM before SIGKILL, and how long either side waits while the
// other says nothing (each sends a keep-alive every second) before it counts the connection lost.
inline constexpr std::chrono::seconds kAgentKillGrace{5};
inline constexpr std::chrono::seconds kAgentSilence{15};

}  // namespace rocebench
