// The KDL grammar (see docs/language.md). ANTLR generates the C++ lexer and parser from it; the
// builder in dsl/parse/ turns the parse tree into kdl::ast.
//
// Shape rules that keep parsing linear and the builder simple:
//  - every decision needs at most two tokens of lookahead: `(a)` and `(a, b)` share one rule and the
//    builder tells a tuple by its commas, so nothing has to scan to a closing bracket first;
//  - a string is one token; the builder splits out `${...}` and parses each piece on its own;
//  - the lexer never fails: stray characters and unterminated strings or comments become tokens the
//    parser driver reports with a precise message.
grammar KDL;

@lexer::members {
  // The type scanStringRest() gives a string that reaches the end of its line. (ANTLR 4.7's C++
  // target drops `tokens { }` types from the enum.) scanTokens() reports it and hands the parser
  // a STRING, so the parser never sees this type.
  static constexpr size_t UNTERMINATED_STRING = 1000;

  // Consumes a string after its opening quote, with a stack instead of recursion for strings
  // nested in `${...}`: true = inside a string, false = inside a `${...}`.
  void scanStringRest() {
    std::vector<bool> inString{true};
    while (!inString.empty()) {
      size_t c = _input->LA(1);
      if (c == EOF || c == '\n' || c == '\r') {
        setType(UNTERMINATED_STRING);
        return;
      }
      if (inString.back()) {
        if (c == '"') {
          inString.pop_back();
        } else if (c == '\\' && _input->LA(2) != EOF && _input->LA(2) != '\n' && _input->LA(2) != '\r') {
          take();
        } else if (c == '$' && _input->LA(2) == '{') {
          take();
          inString.push_back(false);
        }
      } else if (c == '"') {
        inString.push_back(true);
      } else if (c == '}') {
        inString.pop_back();
      }
      take();
    }
  }
  // Consumes one character, keeping the lexer's line and column right.
  void take() { getInterpreter<antlr4::atn::LexerATNSimulator>()->consume(_input); }
}

// ---- statements ----------------------------------------------------------------------------------

file : stmt* EOF ;

// The entry for the expression inside `${...}`.
interpolation : expr EOF ;

stmt
  : importStmt
  | letStmt
  | fnStmt
  | templateStmt
  | kernelStmt
  | forStmt
  | ifStmt
  | assertStmt
  ;

importStmt : IMPORT STRING ';' ;

// A name being defined. Keywords are taken here too so that `let for = 1;` gets one clear message
// from the builder instead of a cascade of recovery errors.
name
  : IDENT | LET | FN | TEMPLATE | KERNEL | FOR | IN | IF | ELSE | IMPORT | ASSERT | EPILOGUE | PARAM | INPUT
  | OUTPUT | TRUE | FALSE | AUTO
  ;
letStmt : LET name '=' expr ';' ;
fnStmt : FN name '(' paramList? ')' '=' expr ';' ;
templateStmt : TEMPLATE name '(' paramList? ')' kernelBody ;
paramList : param (',' param)* ','? ;
param : name ('=' expr)? ;

kernelStmt : KERNEL kernelName ( '=' IDENT '(' argList? ')' ( kernelBody | ';' ) | kernelBody ) ;
kernelName : name | STRING | '(' expr ')' ;
argList : arg (',' arg)* ','? ;
arg : (IDENT '=')? expr ;

forStmt : FOR name IN expr block ;
ifStmt : IF expr block ( ELSE ( ifStmt | block ) )? ;
block : '{' stmt* '}' ;
assertStmt : ASSERT expr ( ',' expr )? ';' ;

// ---- kernel bodies -------------------------------------------------------------------------------

kernelBody : '{' bodyItem* '}' ;

bodyItem
  : fieldItem
  | operandItem
  | epilogueBlock
  | letStmt
  | assertStmt
  ;

fieldItem : IDENT '=' expr ';' ;
// `align N` and `scale (BM, BK)`, in either order: the words are not keywords (they stay usable as
// names); the builder checks them.
operandItem : IDENT ':' postfixExpr postfixExpr operandSuffix* ';' ;
operandSuffix : IDENT expr ;

epilogueBlock : EPILOGUE '{' epilogueItem* '}' ;

// An input's `[row]` parses as an index of its dtype; the builder takes the last index apart.
epilogueItem
  : PARAM name ( ':' postfixExpr )? '=' expr ';'           # epParam
  | INPUT name ':' postfixExpr ';'                         # epInput
  | OUTPUT name ':' postfixExpr postfixExpr? '=' expr ';'  # epOutput
  | LET name '=' expr ';'                                  # epLet
  | IDENT '=' expr ';'                                     # epAssign
  ;

// ---- expressions (lowest precedence last) -----------------------------------------------------

expr
  : postfixExpr                                     # postfix
  | op=( '-' | '!' | '+' ) expr                     # unary
  | expr op=( '*' | '/' | '%' ) expr                # binary
  | expr op=( '+' | '-' ) expr                      # binary
  | expr op=( '<' | '<=' | '>' | '>=' ) expr        # binary
  | expr op=( '==' | '!=' ) expr                    # binary
  | expr op='&&' expr                               # binary
  | expr op='||' expr                               # binary
  | <assoc=right> expr op='?' expr ':' expr         # ternary
  ;

postfixExpr : primary postfixOp* ;

// An empty index `[]` is accepted here only for an input's broadcast; the builder rejects it elsewhere.
postfixOp
  : '(' ( expr ( ',' expr )* ','? )? ')'            # callOp
  | '[' expr? ']'                                   # indexOp
  ;

primary
  : INT                                             # intLit
  | FLOAT                                           # floatLit
  | STRING                                          # stringLit
  | ( TRUE | FALSE )                                # boolLit
  | AUTO                                            # autoLit
  | IDENT                                           # nameRef
  | '(' ( expr ( ',' expr )* ','? )? ')'            # parens
  | '[' ( expr ( ',' expr )* ','? )? ']'            # list
  ;

// ---- lexer ---------------------------------------------------------------------------------------

LET : 'let' ;
FN : 'fn' ;
TEMPLATE : 'template' ;
KERNEL : 'kernel' ;
FOR : 'for' ;
IN : 'in' ;
IF : 'if' ;
ELSE : 'else' ;
IMPORT : 'import' ;
ASSERT : 'assert' ;
EPILOGUE : 'epilogue' ;
PARAM : 'param' ;
INPUT : 'input' ;
OUTPUT : 'output' ;
TRUE : 'true' ;
FALSE : 'false' ;
AUTO : 'auto' ;

SEMI : ';' ;
COMMA : ',' ;
COLON : ':' ;
ASSIGN : '=' ;
LPAREN : '(' ;
RPAREN : ')' ;
LBRACK : '[' ;
RBRACK : ']' ;
LBRACE : '{' ;
RBRACE : '}' ;
PLUS : '+' ;
MINUS : '-' ;
STAR : '*' ;
SLASH : '/' ;
PERCENT : '%' ;
NOT : '!' ;
LT : '<' ;
LE : '<=' ;
GT : '>' ;
GE : '>=' ;
EQ : '==' ;
NE : '!=' ;
AND : '&&' ;
OR : '||' ;
QUESTION : '?' ;

FLOAT : DEC '.' DEC EXPONENT? | DEC EXPONENT ;
INT : DEC | '0' [xX] HEX ( '_'? HEX )* ;
fragment DEC : [0-9] ( '_'? [0-9] )* ;
fragment HEX : [0-9a-fA-F] ;
fragment EXPONENT : [eE] [+-]? DEC ;

IDENT : [A-Za-z_] [A-Za-z0-9_]* ;

// A string ends on its line. Its `${...}` pieces may hold strings of their own, which a regular
// rule cannot match without recursion, so the rest is consumed by scanStringRest(). Escapes and
// pieces are decoded by the builder.
STRING : '"' { scanStringRest(); } ;

WS : [ \t\r\n]+ -> skip ;
LINE_COMMENT : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
// A `/*` with no `*/` after it: the text up to the end of the file, never crossing a `*/`.
UNTERMINATED_COMMENT : '/*' ( ~'*' | '*'+ ~[*/] )* '*'* EOF ;

// Anything else is one bad character; the driver reports it instead of the lexer failing.
ERROR_CHAR : . ;
