//! `svc-macros`: the macro front door of svc. [`service!`] generates a service's Rust code from its
//! `svc.yml` during macro expansion, so a service crate needs no build script.
//!
//! The macro holds no generation logic of its own: it calls [`svc_generator::generate`], the same
//! function `svc_generator::build` writes `$OUT_DIR/svc.rs` from, and expands to that code.

use std::path::{Path, PathBuf};

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};

/// Generates a service from its `svc.yml`, in place: the items are exactly those a build script
/// with `svc_generator::build("svc.yml")` writes to `$OUT_DIR/svc.rs` (the model's types, the
/// root `Query` and `Mutation`, and `Service`, which `svc_runtime::run::<Service>()` serves).
///
/// ```ignore
/// // src/lib.rs of a service crate with `svc-runtime` and `svc-macros` as dependencies.
/// svc_macros::service!("svc.yml");
/// ```
///
/// # Where the path is looked up
///
/// - `service!("svc.yml")`: relative to `CARGO_MANIFEST_DIR`, the directory of the `Cargo.toml`
///   of the crate that invokes the macro. This is what `svc_generator::build` does, so a crate
///   can switch between the two without moving files.
/// - `service!(relative_to_file = "../svc.yml")`: relative to the directory of the Rust source
///   file that invokes the macro, the way `include_str!` resolves its path. It uses
///   `proc_macro::Span::local_file`, stable since Rust 1.88. It exists for crates whose manifest
///   directory is not where the sources are: trybuild, for instance, compiles each test file as a
///   binary of a crate it generates under `target/tests/trybuild/`, so `CARGO_MANIFEST_DIR`
///   points there, while the test's model sits next to the test file.
///
/// An absolute path is used as it is in both forms.
///
/// # Errors in the model
///
/// The macro expands to one `compile_error!` that lists every problem of the model, rendered as
/// the build script prints them (`error[…]: …`, then `--> types.graphql:3:9` and the line with
/// carets; paths relative to the directory of `svc.yml`). The error points at the path argument.
///
/// # Rebuilds
///
/// A proc macro cannot print `cargo:rerun-if-changed`. Instead the expansion ends with one
/// `const _: &[u8] = ::core::include_bytes!("…");` per input file (`svc.yml`, its types files and
/// its permission query files, by absolute path), which puts them into the crate's dependency
/// information, so cargo recompiles the crate when one of them changes. A failed expansion needs
/// nothing of the sort: cargo compiles a crate that failed again anyway. (Inputs whose path is
/// not valid UTF-8 cannot be named in a literal and are not tracked.)
#[proc_macro]
pub fn service(input: TokenStream) -> TokenStream {
    let args = syn::parse_macro_input!(input as Args);
    expand(&args)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// What the path of `svc.yml` is relative to.
enum Base {
    ManifestDir,
    SourceFile,
}

/// The macro's input: `"path"` or `relative_to_file = "path"`, optionally followed by a comma.
struct Args {
    base: Base,
    path: LitStr,
}

const USAGE: &str = "expected the path of `svc.yml` as a string literal: \
    `service!(\"svc.yml\")` (relative to CARGO_MANIFEST_DIR) or \
    `service!(relative_to_file = \"svc.yml\")` (relative to this source file)";

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let base = if input.peek(LitStr) {
            Base::ManifestDir
        } else if input.peek(Ident) {
            let key: Ident = input.parse()?;
            if key != "relative_to_file" {
                return Err(syn::Error::new(key.span(), USAGE));
            }
            input.parse::<Token![=]>()?;
            Base::SourceFile
        } else {
            return Err(input.error(USAGE));
        };
        let path = input
            .parse::<LitStr>()
            .map_err(|err| syn::Error::new(err.span(), USAGE))?;
        input.parse::<Option<Token![,]>>()?;
        if !input.is_empty() {
            return Err(input.error(USAGE));
        }
        Ok(Self { base, path })
    }
}

fn expand(args: &Args) -> syn::Result<TokenStream2> {
    let span = args.path.span();
    let written = PathBuf::from(args.path.value());
    let svc_yml = match args.base {
        Base::ManifestDir => svc_generator::manifest_relative(&written),
        Base::SourceFile => {
            let Some(file) = proc_macro::Span::call_site().local_file() else {
                return Err(syn::Error::new(
                    span,
                    "`relative_to_file` needs the invoking source file on disk, and this \
                     invocation has none; use `service!(\"…\")`, relative to CARGO_MANIFEST_DIR",
                ));
            };
            file.parent().unwrap_or(Path::new("")).join(&written)
        }
    };
    let generated = svc_generator::generate(&svc_yml).map_err(|failure| {
        let rendered = failure.to_string();
        syn::Error::new(
            span,
            format!(
                "the svc model `{}` has errors; the service was not generated\n\n{}",
                written.display(),
                rendered.trim_end()
            ),
        )
    })?;
    let code: TokenStream2 = generated.code.parse().map_err(|err| {
        syn::Error::new(
            Span::call_site(),
            format!("svc-generator produced code that does not parse (a generator bug): {err}"),
        )
    })?;
    let tracked = generated
        .inputs
        .iter()
        .filter_map(|path| path.to_str())
        .map(|path| quote! { const _: &[u8] = ::core::include_bytes!(#path); });
    Ok(quote! {
        #code
        #(#tracked)*
    })
}
