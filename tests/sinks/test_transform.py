import pytest

from s3sqs.sinks.transform import TransformError, apply_transform, load_transform, parse_spec


def write_module(tmp_path, name, body):
    (tmp_path / f"{name}.py").write_text(body)
    return (str(tmp_path),)


def test_spec_must_be_module_colon_function():
    assert parse_spec("pkg.mod:fn") == ("pkg.mod", "fn")
    for bad in ("mod", "mod:", ":fn", "mod:fn:x", "mod-x:fn", "mod:fn()"):
        with pytest.raises(TransformError, match="--transform .* must look like module:function"):
            parse_spec(bad)


def test_loads_a_one_argument_function_from_the_search_path(tmp_path):
    dirs = write_module(tmp_path, "t_ok", "def clean(df):\n    return df\n\ndef _helper(): pass\n")
    assert load_transform("t_ok:clean", dirs)("x") == "x"


def test_missing_module_says_where_modules_are_found(tmp_path):
    with pytest.raises(TransformError, match=r"--transform t_absent:fn: no module named 't_absent'.*"
                                             r"--transform-module"):
        load_transform("t_absent:fn", (str(tmp_path),))


def test_import_failure_inside_the_module_is_reported_with_its_cause(tmp_path):
    dirs = write_module(tmp_path, "t_broken", "import not_installed_anywhere\n")
    with pytest.raises(TransformError, match=r"importing 't_broken' failed: No module named 'not_installed_anywhere'"):
        load_transform("t_broken:fn", dirs)
    dirs = write_module(tmp_path, "t_raises", "raise RuntimeError('config missing')\n")
    with pytest.raises(TransformError, match=r"importing 't_raises' failed: RuntimeError: config missing") as e:
        load_transform("t_raises:fn", dirs)
    assert isinstance(e.value.__cause__, RuntimeError)


def test_missing_function_lists_what_the_module_has(tmp_path):
    dirs = write_module(tmp_path, "t_other", "def clean(df): return df\nVALUE = 3\n")
    with pytest.raises(TransformError, match=r"module 't_other' has no 'tidy'; it has clean"):
        load_transform("t_other:tidy", dirs)
    with pytest.raises(TransformError, match=r"'VALUE' is a int, not a function"):
        load_transform("t_other:VALUE", dirs)


def test_wrong_signature_fails_naming_the_flag(tmp_path):
    dirs = write_module(tmp_path, "t_sig", "def two(df, spark): return df\ndef none(): return 1\n"
                                           "def extra(df, opt=1): return df\n")
    with pytest.raises(TransformError, match=r"--transform t_sig:two: the function must take one argument.*"
                                             r"two\(df, spark\)"):
        load_transform("t_sig:two", dirs)
    with pytest.raises(TransformError, match="must take one argument"):
        load_transform("t_sig:none", dirs)
    assert load_transform("t_sig:extra", dirs)  # a default for the rest is fine


def test_applying_checks_what_comes_back():
    with pytest.raises(TransformError, match=r"--transform m:f returned str, not a DataFrame"):
        apply_transform(lambda df: "oops", object(), "m:f")
    with pytest.raises(TransformError, match=r"--transform m:f failed while building the query: KeyError: 'amount'"):
        apply_transform(lambda df: {}["amount"], object(), "m:f")
