/* commands.h — the subcommands of bin/kvscope. Each takes the arguments after its
 * name and returns the exit status by the rule of cli.h: 0 ok, 1 the check failed,
 * 2 bad input or an environment error. */
#ifndef KVSCOPE_COMMANDS_H
#define KVSCOPE_COMMANDS_H

int cmd_run(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_budget(int argc, char **argv);
int cmd_kvmem(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_format(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_heads(int argc, char **argv);
int cmd_loss(int argc, char **argv);
int cmd_kvvalues(int argc, char **argv);
int cmd_frontier(int argc, char **argv);
int cmd_copying(int argc, char **argv);

#endif
