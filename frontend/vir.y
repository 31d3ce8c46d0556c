/*
 * vir.y — the grammar of the textual IR (.vir), the text vcc_print_graph writes (ir/print.c).
 *
 * A pure (reentrant) Bison parser with locations; the scanner is frontend/vir.l, the actions call the
 * graph builder in frontend/vir.c, whose state (VirParser) is the only state there is.
 *
 *   file      : opset decl* node* output* [plan* arena]        (sections in this order)
 *   opset     : "opset" INT
 *   decl      : KIND STRING type [data=STRING]                input "x" f32[2,3,4,8,8]
 *               (data: a constant's value, its little-endian bytes in hex: const "c" f32[] data="0000803f")
 *   node      : "node" INT PHASE OP STRING "(" ins ")" "->" "(" outs ")" [ "{" attrs "}" ]
 *   ins       : ( STRING | "_" ) % ","                         tensors read, "_" = absent
 *   outs      : ( STRING type | "_" ) % ","                    tensors the node defines
 *   attr      : NAME "=" ( INT | FLOAT | STRING | "[" [ INT|FLOAT % "," ] "]" )
 *   output    : "output" STRING
 *   plan      : "plan" STRING CATEGORY bytes=INT live=( "[" INT "," INT "]" | persistent ) offset=INT
 *               [view_of=STRING] [inplace_of=STRING]
 *   arena     : "arena" bytes=INT persistent=INT planned=INT lower_bound=INT no_reuse=INT
 *   type      : ( DTYPE | "?" ) "[" [ INT % "," ] "]"            f32[2,3]  i64[2]  f32[]  ?[]
 *
 * Every item ends at a newline; blank lines and '#' comments (to the end of the line) may appear
 * anywhere. KIND, PHASE, OP, CATEGORY, DTYPE and the key names are identifiers checked by the actions
 * (so a misspelt op is "unknown op 'Cnv'" at its column, not a syntax error). The scanner turns the
 * five statement keywords into tokens; an attribute may still be named like one of them.
 */

%define api.pure full
%define api.prefix {vir_}
%define api.location.type {VirLoc}
%define parse.error verbose
%define parse.lac full
%locations
%param {void *scanner}
%parse-param {VirParser *p}

%code requires {
#include "ir.h"

/* A source range, 1-based lines and columns (the names YYLLOC_DEFAULT expects). */
typedef struct VirLoc {
    int first_line, first_column, last_line, last_column;
} VirLoc;

/* A tensor type as written: f32[2,3] (dt VCC_DT_UNDEF for "?"). */
typedef struct {
    VccDType dt;
    VccShape shape;
    bool bad; /* an error was reported for it */
} VirType;

/* An attribute value being read (owned; vir_value_free). */
typedef struct VirValue VirValue;

/* key=INT of plan and arena lines. */
typedef struct {
    char *key;
    int64_t v;
    VirLoc kloc, vloc;
} VirKeyInt;

/* live=[start,end] or live=persistent. */
typedef struct {
    char *key;
    char *word; /* "persistent" (or what stood there), NULL for an interval */
    int64_t start, end;
    VirLoc kloc, vloc;
} VirLive;

typedef struct VirParser VirParser;

/* The scanner's extra data: the builder and the position of the next character. */
typedef struct {
    VirParser *p;
    int line, col;
} VirScan;
}

%code provides {
/* ---- frontend/vir.c: the builder the grammar actions call (internal to the .vir reader) */

/* Report "<file>:LINE:COL: error: <message>" at loc through vcc_error; the first status is kept. */
void vir_report(VirParser *p, const VirLoc *loc, VccStatus st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* As vir_report (VCC_ERR_PARSE), for a token the scanner refuses: the syntax error that follows is not
 * reported again. */
void vir_lex_error(VirParser *p, const VirLoc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* A syntax error Bison found (msg is its text). */
void vir_syntax_error(VirParser *p, const VirLoc *loc, const char *msg);

void vir_opset(VirParser *p, int64_t v);
VirType vir_type(VirParser *p, char *dtype, const VirLoc *dloc, VirType dims);
VirType vir_dims_add(VirParser *p, VirType t, int64_t d, const VirLoc *loc);
void vir_declare(VirParser *p, char *kind, const VirLoc *kloc, char *name, const VirLoc *nloc, VirType ty);
void vir_declare_data(VirParser *p, char *kind, const VirLoc *kloc, char *name, const VirLoc *nloc, VirType ty,
                      char *key, const VirLoc *keyloc, char *hex, const VirLoc *hloc);
void vir_node_input(VirParser *p, char *name, const VirLoc *loc);
void vir_node_output(VirParser *p, char *name, const VirLoc *loc, VirType ty);
void vir_node_attr(VirParser *p, char *name, const VirLoc *loc, VirValue *v);
void vir_node_begin(VirParser *p, int64_t index, const VirLoc *iloc, char *phase, const VirLoc *ploc, char *op,
                    const VirLoc *oloc, char *name);
void vir_node_end(VirParser *p);
void vir_graph_output(VirParser *p, char *name, const VirLoc *loc);
void vir_plan_ref(VirParser *p, char *key, const VirLoc *kloc, char *name, const VirLoc *nloc);
void vir_plan(VirParser *p, const VirLoc *loc, char *name, const VirLoc *nloc, char *category,
              const VirLoc *cloc, VirKeyInt bytes, VirLive live, VirKeyInt offset);
void vir_arena(VirParser *p, const VirLoc *loc, const VirKeyInt kv[5]);

VirValue *vir_value_int(int64_t v);
VirValue *vir_value_float(float v);
VirValue *vir_value_string(char *s);
VirValue *vir_value_list(void);
VirValue *vir_value_push_int(VirValue *list, int64_t v);
VirValue *vir_value_push_float(VirValue *list, float v);
void vir_value_free(VirValue *v);
}

%code {
int vir_lex(VIR_STYPE *lval, VirLoc *lloc, void *scanner);
static void vir_error(VirLoc *loc, void *scanner, VirParser *p, const char *msg);
}

%union {
    char *str;
    int64_t i;
    float f;
    VirType type;
    VirValue *val;
    VirKeyInt kv;
    VirLive live;
}

%token <str> IDENT "identifier" STRING "string"
%token <i> INT "integer"
%token <f> FLOAT "number"
%token KW_OPSET "opset" KW_NODE "node" KW_OUTPUT "output" KW_PLAN "plan" KW_ARENA "arena"
%token ARROW "->" NL "end of line" UNDERSCORE "_" LEXERR "invalid token"

%type <str> attr_name
%type <type> type dims dim_items
%type <val> value num_items
%type <kv> key_int
%type <live> live

%destructor { free($$); } <str>
%destructor { vir_value_free($$); } <val>
%destructor { free($$.key); } <kv>
%destructor { free($$.key); free($$.word); } <live>

%%

file
    : opt_nl opset_stmt decls nodes outputs plan_section
    ;

opt_nl
    : %empty
    | opt_nl NL
    ;

end
    : NL
    | end NL
    ;

opset_stmt
    : KW_OPSET INT end                      { vir_opset(p, $2); }
    ;

decls
    : %empty
    | decls decl
    ;

decl
    : IDENT STRING type end                 { vir_declare(p, $1, &@1, $2, &@2, $3); }
    | IDENT STRING type IDENT '=' STRING end
                                            { vir_declare_data(p, $1, &@1, $2, &@2, $3, $4, &@4, $6, &@6); }
    ;

type
    : IDENT '[' dims ']'                    { $$ = vir_type(p, $1, &@1, $3); }
    | '?' '[' dims ']'                      { $$ = vir_type(p, NULL, &@1, $3); }
    ;

dims
    : %empty                                { $$ = (VirType){0}; }
    | dim_items
    ;

dim_items
    : INT                                   { $$ = vir_dims_add(p, (VirType){0}, $1, &@1); }
    | dim_items ',' INT                     { $$ = vir_dims_add(p, $1, $3, &@3); }
    ;

nodes
    : %empty
    | nodes node
    ;

node
    : node_head '(' ins ')' ARROW '(' outs ')' attrs end
                                            { vir_node_end(p); }
    ;

node_head
    : KW_NODE INT IDENT IDENT STRING        { vir_node_begin(p, $2, &@2, $3, &@3, $4, &@4, $5); }
    ;

ins
    : %empty
    | in_items
    ;

in_items
    : in_item
    | in_items ',' in_item
    ;

in_item
    : STRING                                { vir_node_input(p, $1, &@1); }
    | UNDERSCORE                            { vir_node_input(p, NULL, &@1); }
    ;

outs
    : %empty
    | out_items
    ;

out_items
    : out_item
    | out_items ',' out_item
    ;

out_item
    : STRING type                           { vir_node_output(p, $1, &@1, $2); }
    | UNDERSCORE                            { vir_node_output(p, NULL, &@1, (VirType){0}); }
    ;

attrs
    : %empty
    | '{' '}'
    | '{' attr_items '}'
    ;

attr_items
    : attr
    | attr_items ',' attr
    ;

attr
    : attr_name '=' value                   { vir_node_attr(p, $1, &@1, $3); }
    ;

attr_name
    : IDENT
    | KW_OPSET                              { $$ = vcc_strdup("opset"); }
    | KW_NODE                               { $$ = vcc_strdup("node"); }
    | KW_OUTPUT                             { $$ = vcc_strdup("output"); }
    | KW_PLAN                               { $$ = vcc_strdup("plan"); }
    | KW_ARENA                              { $$ = vcc_strdup("arena"); }
    | UNDERSCORE                            { $$ = vcc_strdup("_"); }
    ;

value
    : INT                                   { $$ = vir_value_int($1); }
    | FLOAT                                 { $$ = vir_value_float($1); }
    | STRING                                { $$ = vir_value_string($1); }
    | '[' ']'                               { $$ = vir_value_list(); }
    | '[' num_items ']'                     { $$ = $2; }
    ;

num_items
    : INT                                   { $$ = vir_value_push_int(vir_value_list(), $1); }
    | FLOAT                                 { $$ = vir_value_push_float(vir_value_list(), $1); }
    | num_items ',' INT                     { $$ = vir_value_push_int($1, $3); }
    | num_items ',' FLOAT                   { $$ = vir_value_push_float($1, $3); }
    ;

outputs
    : %empty
    | outputs output
    ;

output
    : KW_OUTPUT STRING end                  { vir_graph_output(p, $2, &@2); }
    ;

plan_section
    : %empty
    | plans arena
    ;

plans
    : %empty
    | plans plan
    ;

plan
    : KW_PLAN STRING IDENT key_int live key_int plan_refs end
                                            { vir_plan(p, &@1, $2, &@2, $3, &@3, $4, $5, $6); }
    ;

key_int
    : IDENT '=' INT                         { $$ = (VirKeyInt){$1, $3, @1, @3}; }
    ;

live
    : IDENT '=' '[' INT ',' INT ']'         { $$ = (VirLive){$1, NULL, $4, $6, @1, @3}; }
    | IDENT '=' IDENT                       { $$ = (VirLive){$1, $3, -1, -1, @1, @3}; }
    ;

plan_refs
    : %empty
    | plan_refs IDENT '=' STRING            { vir_plan_ref(p, $2, &@2, $4, &@4); }
    ;

arena
    : KW_ARENA key_int key_int key_int key_int key_int end
                                            { VirKeyInt kv[5] = {$2, $3, $4, $5, $6}; vir_arena(p, &@1, kv); }
    ;

%%

static void vir_error(VirLoc *loc, void *scanner, VirParser *p, const char *msg) {
    (void)scanner;
    vir_syntax_error(p, loc, msg);
}
