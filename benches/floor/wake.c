// The wake-up floor of this machine, to read ferry's `ferry-bench wait` figures against.
// Build and run: gcc -O2 -o /tmp/wake benches/floor/wake.c && /tmp/wake futex 1000 && /tmp/wake sock 1000
// (second argument: idle gap in us before each wake; the receiver is pinned to core 1, the waker to core 0).
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>
static uint64_t now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
struct sh { volatile uint32_t word; volatile uint64_t stamp; volatile uint32_t ready; };
static int cmp(const void*a,const void*b){uint64_t x=*(uint64_t*)a,y=*(uint64_t*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  int N=1000, gap=atoi(argc>2?argv[2]:"1000"); int mode_sock = argc>1 && !strcmp(argv[1],"sock");
  struct sh*s=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  int sv[2]; socketpair(AF_UNIX,SOCK_DGRAM,0,sv);
  uint64_t*lat=malloc(N*8);
  if(fork()==0){ pin(0);
    for(int i=0;i<N;i++){ while(s->ready!=(uint32_t)(i+1)); usleep(gap);
      s->stamp=now(); if(mode_sock){char c=1;send(sv[0],&c,1,0);} else {s->word=i+1; syscall(SYS_futex,&s->word,FUTEX_WAKE,1,0,0,0);} }
    _exit(0);}
  pin(1);
  for(int i=0;i<N;i++){ s->ready=i+1;
    if(mode_sock){struct pollfd p={sv[1],POLLIN,0}; poll(&p,1,-1); char c; recv(sv[1],&c,1,0);}
    else { while(s->word!=(uint32_t)(i+1)) syscall(SYS_futex,&s->word,FUTEX_WAIT,s->word,0,0,0); }
    lat[i]=now()-s->stamp; }
  wait(0); qsort(lat,N,8,cmp);
  printf("%s gap %dus: p50 %.1f us  p90 %.1f  p99 %.1f\n", mode_sock?"unix-dgram+poll":"futex", gap, lat[N/2]/1e3, lat[N*9/10]/1e3, lat[N*99/100]/1e3);
}
