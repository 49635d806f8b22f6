/* A stand-in for the Redox kernel's ELF: functions linked in the kernel's half of the address
   space (tests/kernel_samples.rs builds it with -mcmodel=kernel and links it there). */
long sys_read(long fd) { return fd * 3 + 1; }
long syscall_handler(long n) { return sys_read(n) ^ 5; }
void syscall_instruction(void) { for (;;) {} }
