// Whole-step rules of 'dist': the pipeline, its chunks (Megatron's interleaved
// assignment of blocks) and its per-stage schedules, one case per rule.
// RUN: blueprint-opt %s --split-input-file --verify-diagnostics

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
// expected-error @+1 {{'along' axis 'tp2' is not an axis of mesh @world}}
dist.pipeline @p on @world along "tp2" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
// expected-error @+1 {{has 3 stages, but mesh axis 'pp' has size 2}}
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 3 chunks = 1 microbatches = 2 blocks = 6
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
dist.chunk @s2.c0 of @p stage = 2 chunk = 0 first_block = 4 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 2 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
// expected-error @+1 {{has 1 blocks over 2 stages x 1 chunks: every stage needs a block and the fullest stage's 1 blocks must split evenly into the chunks}}
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 1
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
// expected-error @+1 {{schedule 'one_f_one_b' runs one chunk per stage, but chunks = 2}}
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 2 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 1 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 1 blocks = 1 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s0.c1 of @p stage = 0 chunk = 1 first_block = 2 blocks = 1 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c1 of @p stage = 1 chunk = 1 first_block = 3 blocks = 1 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
// expected-error @+1 {{schedule 'interleaved_one_f_one_b' needs at least 2 chunks per stage}}
dist.pipeline @p on @world along "pp" schedule = interleaved_one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
// Interleaved with microbatches not a multiple of the stages is valid (an
// uneven pipeline: the missing microbatches leave holes in the schedule).
dist.pipeline @p on @world along "pp" schedule = interleaved_one_f_one_b stages = 2 chunks = 2 microbatches = 3 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 1 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 1 blocks = 1 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s0.c1 of @p stage = 0 chunk = 1 first_block = 2 blocks = 1 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c1 of @p stage = 1 chunk = 1 first_block = 3 blocks = 1 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 2, 0, 0, 2, 1, 0, 0, 0, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 2, 0, 1, 2, 1, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 2, 0, 0, 2, 1, 0, 0, 0, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 2, 0, 1, 2, 1, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// expected-error @+1 {{'pipeline' @q does not name a 'dist.pipeline' in this module}}
dist.chunk @x of @q stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// expected-error @+1 {{is stage 2 chunk 0, but the pipeline has stages 0..1 and chunks 0..0}}
dist.chunk @s2.c0 of @p stage = 2 chunk = 0 first_block = 4 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// expected-error @+1 {{is a second chunk for stage 1 chunk 0 (the first is at}}
dist.chunk @again of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// expected-error @+1 {{holds 3 blocks, but the pipeline gives chunk 0 of stage 1 2}}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 3 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// expected-error @+1 {{has first_block = 0, but chunk 0 of stage 1 starts at block 2 (Megatron's interleaved assignment)}}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// expected-error @+1 {{'template' region must take one !dist.token argument (the entry token)}}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
// expected-error @+1 {{has no chunk for stage 1 chunk 0}}
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
// expected-error @+1 {{has no schedule for stage 1}}
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// expected-error @+1 {{'pipeline' @q does not name a 'dist.pipeline' in this module}}
dist.schedule @q stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// expected-error @+1 {{is for stage 2, but the pipeline has stages 0..1}}
dist.schedule @p stage = 2 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1]
// expected-error @+1 {{is a second schedule for stage 0 (the first is at}}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
// expected-error @+1 {{'slots' must be (microbatch, chunk, direction) triples, but has 4 values}}
dist.schedule @p stage = 1 slots = [0, 0, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
// expected-error @+1 {{has 2 slots, but 2 microbatches x 1 chunks need 4 (a forward and a backward each)}}
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
// expected-error @+1 {{slot #1 (2, 0, 0) is outside microbatches 0..1, chunks 0..0, direction 0 (forward) or 1 (backward)}}
dist.schedule @p stage = 1 slots = [0, 0, 0, 2, 0, 0, 0, 0, 1, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
// expected-error @+1 {{slot #0 runs the backward of microbatch 0 chunk 0 before its forward}}
dist.schedule @p stage = 1 slots = [0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.chunk @s1.c0 of @p stage = 1 chunk = 0 first_block = 2 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
dist.schedule @p stage = 0 slots = [0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1]
// expected-error @+1 {{slot #1 runs the forward of microbatch 0 chunk 0 a second time}}
dist.schedule @p stage = 1 slots = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1]

// -----

dist.header schema "blueprint.dist" version "1.0" model "sha256:1111111111111111111111111111111111111111111111111111111111111111"
dist.mesh @world(axes = ["dp", "pp", "tp"], shape = [1, 2, 1])
dist.pipeline @p on @world along "pp" schedule = one_f_one_b stages = 2 chunks = 1 microbatches = 2 blocks = 4 unrolled
// expected-error @+1 {{belongs to an unrolled pipeline, whose tasks are instances (no chunks or schedules remain)}}
dist.chunk @s0.c0 of @p stage = 0 chunk = 0 first_block = 0 blocks = 2 {
^bb0(%in: !dist.token):
  dist.yield
} boundary {
^bb0(%in: !dist.token):
  dist.yield
}
